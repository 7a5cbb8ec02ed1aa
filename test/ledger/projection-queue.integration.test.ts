import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProjectionMessage } from "../../src/db/projection-batch";
import { countingD1, newMetrics, withBindings } from "../../src/instrument/d1-metrics";
import { FlushSchedule } from "../../src/ledger/flush-schedule";
import { InFlight } from "../../src/ledger/in-flight";
import { flushOutboxOnce, queueProjection } from "../../src/ledger/outbox";
import { IN_FLIGHT_MS } from "../../src/ledger/records-queued";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import { LedgerWriter } from "../../src/ledger/writer";
import { projectionQueue } from "../../src/outbox/projection-consumer";
import { admin } from "../support/api";
import { createOneDatabaseApp } from "../support/layout";
import { until } from "../support/until";
import { freshLedger, grantOf, hookedAppId } from "./support";

/**
 * The projection queue (issue 33): ledgers send their records to a queue and
 * its consumer writes many ledgers' records in ONE D1 batch, then
 * acknowledges; a ledger's entry goes only then. Real ledgers, real D1, the
 * real queue for the burst; consumer batches made by hand where a test must
 * choose what is in one.
 */

type Stub = ReturnType<typeof freshLedger>["stub"];
type Entry = { id: number; version: number; next_attempt_at: number; attempts: number; last_error: string | null };

const entries = (stub: Stub) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql.exec<Entry>("SELECT id, version, next_attempt_at, attempts, last_error FROM outbox ORDER BY id").toArray(),
	);

const projected = (rewarddtlid: string) =>
	env.DB.prepare("SELECT comment, version FROM rewards WHERE rewarddtlid = ?")
		.bind(rewarddtlid)
		.first<{ comment: string | null; version: number }>();

/** A ledger with one reward projected and an empty outbox (the real queue took its first flush). */
async function settledLedger(appid: string) {
	const ledger = freshLedger(appid);
	await ledger.stub.grant(appid, ledger.userkey, [grantOf({ usertype: "Friend" })]);
	await until(
		"the first flush acknowledged",
		() => entries(ledger.stub),
		(e) => e.length === 0,
	);
	return ledger;
}

/** Changes reward 1's comment inside the object without starting a flush, and queues its projection: the entry to send. */
function changeComment(stub: Stub, comment: string) {
	return runInDurableObject(stub, (_l, state) => {
		const sql = state.storage.sql;
		const version = sql
			.exec<{ v: number }>("UPDATE rewards SET comment = ?, version = version + 1 WHERE seq = 1 RETURNING version AS v", comment)
			.one().v;
		queueProjection(sql, 1, version, Date.now());
		return version;
	});
}

/** A queue that captures what is sent to it (or refuses it with `fail`). */
function capturingQueue(fail?: Error) {
	const sent: ProjectionMessage[] = [];
	const queue = {
		sendBatch: async (messages: { body: ProjectionMessage }[]) => {
			if (fail) throw fail;
			sent.push(...messages.map((m) => m.body));
		},
	};
	return { sent, queue: queue as unknown as Queue };
}

/** What each test ledger holds in memory for the acknowledgement (in-flight.ts), as the object's FlushSchedule keeps it. */
const memories = new Map<string, InFlight>();
const memoryOf = (userkey: string) => {
	const held = memories.get(userkey) ?? new InFlight();
	memories.set(userkey, held);
	return held;
};

/** One queued flush pass of the ledger, its queue sends captured (or refused with `fail`), with the ledger's in-memory holds. */
function sendPass(ledger: ReturnType<typeof freshLedger>, fail?: Error) {
	const { sent, queue } = capturingQueue(fail);
	return runInDurableObject(ledger.stub, async (_l, state) => {
		await flushOutboxOnce({
			queued: true,
			sql: state.storage.sql,
			transactionSync: (fn) => state.storage.transactionSync(fn),
			env: withBindings(env, { PROJECTION: queue }),
			appid: ledger.appid,
			userkey: ledger.userkey,
			assignCoupon: () => undefined,
			inFlight: memoryOf(ledger.userkey),
		});
		return sent;
	});
}

/** Runs the consumer on `messages` as one batch, its D1 counted (or failing with `fail`). */
async function consume(messages: ProjectionMessage[], fail?: Error) {
	const m = newMetrics();
	const db = fail
		? ({ prepare: env.DB.prepare.bind(env.DB), batch: () => Promise.reject(fail) } as unknown as D1Database)
		: countingD1(env.DB, m);
	const batch = createMessageBatch(
		"referral-projection",
		messages.map((body, i) => ({ id: `p${i}-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body })),
	);
	const ctx = createExecutionContext();
	await projectionQueue(batch, withBindings(env, { DB: db }), ctx);
	return { result: await getQueueResult(batch, ctx), roundTrips: m.d1RoundTrips };
}

describe("projection queue", { timeout: 60_000 }, () => {
	it("writes the records of many ledgers in ONE D1 batch, then each ledger's entry goes", async () => {
		const appid = await hookedAppId();
		const ledgers = await Promise.all(Array.from({ length: 6 }, () => settledLedger(appid)));
		const messages: ProjectionMessage[] = [];
		for (const [i, ledger] of ledgers.entries()) {
			await changeComment(ledger.stub, `burst ${i}`);
			messages.push(...(await sendPass(ledger)));
		}
		expect(messages).toHaveLength(6);
		// Sent, not yet written: each entry is held for the acknowledgement (in memory, its row untouched), not sent again meanwhile.
		for (const ledger of ledgers) {
			const [entry] = await entries(ledger.stub);
			expect(entry?.next_attempt_at).toBeLessThanOrEqual(Date.now());
			expect(await sendPass(ledger)).toEqual([]);
		}
		const { result, roundTrips } = await consume(messages);
		expect(roundTrips).toBe(1);
		expect(result.explicitAcks).toHaveLength(6);
		for (const [i, ledger] of ledgers.entries()) {
			expect(await projected(`${ledger.userkey}-1`)).toMatchObject({ comment: `burst ${i}` });
			expect(await entries(ledger.stub)).toEqual([]);
		}
	});

	it("an older message written after a newer one changes nothing, and its acknowledgement leaves the newer entry", async () => {
		const { stub, appid, userkey } = await settledLedger(await hookedAppId());
		const ledger = { stub, appid, userkey };
		await changeComment(stub, "second");
		const [older] = await sendPass(ledger);
		const v3 = await changeComment(stub, "third");
		const [newer] = await sendPass(ledger);
		if (!older || !newer) throw new Error("no message sent");
		// In one batch, newest first: the version guard keeps the newest.
		await consume([newer, older]);
		expect(await projected(`${userkey}-1`)).toMatchObject({ comment: "third", version: v3 });
		expect(await entries(stub)).toEqual([]);
		// A change after that: an acknowledgement of the older message must not remove its entry.
		await changeComment(stub, "fourth");
		await consume([older]);
		expect(await projected(`${userkey}-1`)).toMatchObject({ comment: "third" });
		expect(await entries(stub)).toHaveLength(1);
	});

	it("D1 down: the batch is retried, the ledger keeps its entry and sends it again once its hold ends", async () => {
		const ledger = await settledLedger(await hookedAppId());
		await changeComment(ledger.stub, "after the outage");
		const messages = await sendPass(ledger);
		const down = await consume(messages, new Error("D1_ERROR: D1 is temporarily unavailable"));
		expect(down.result.retryMessages).toHaveLength(1);
		expect(down.result.explicitAcks).toEqual([]);
		expect(await projected(`${ledger.userkey}-1`)).toMatchObject({ comment: null });
		expect(await entries(ledger.stub)).toHaveLength(1);
		// Held meanwhile: not sent again.
		expect(await sendPass(ledger)).toEqual([]);
		// The hold ends without an acknowledgement (the message's retries ran out): the next pass sends it again.
		memories.set(ledger.userkey, new InFlight());
		const again = await sendPass(ledger);
		expect(again).toHaveLength(1);
		await consume(again);
		expect(await projected(`${ledger.userkey}-1`)).toMatchObject({ comment: "after the outage" });
		expect(await entries(ledger.stub)).toEqual([]);
	});

	it("an evicted ledger forgets its holds and sends an unacknowledged entry again; its stored alarm comes back when the hold ends", async () => {
		const ledger = await settledLedger(await hookedAppId());
		await changeComment(ledger.stub, "lost once");
		const lost = capturingQueue();
		const again = capturingQueue();
		await runInDurableObject(ledger.stub, async (_l, state) => {
			// The object's own flush schedule, twice: before and after an eviction (a new object, its memory empty).
			const schedule = (queue: Queue) =>
				new FlushSchedule(
					state,
					withBindings(env, { PROJECTION: queue }),
					new LedgerWriter(state.storage, { appid: ledger.appid, userkey: ledger.userkey }, () => undefined, LEDGER_MIGRATIONS),
				);
			const before = schedule(lost.queue);
			const sentAt = Date.now();
			await before.flush();
			expect(lost.sent).toHaveLength(1);
			// Held in memory, not in the row: the stored alarm is set for the hold's end, so a lost acknowledgement is retried.
			const alarm = await state.storage.getAlarm();
			expect(alarm).toBeGreaterThanOrEqual(sentAt + IN_FLIGHT_MS);
			expect(alarm).toBeLessThanOrEqual(Date.now() + IN_FLIGHT_MS);
			await before.flush();
			expect(lost.sent).toHaveLength(1);
			// Evicted with the message lost: the new object, woken by that alarm, sends the entry again.
			await schedule(again.queue).alarm();
		});
		expect(again.sent).toHaveLength(1);
		expect(again.sent[0]?.rewards.map((r) => r.row.comment)).toEqual(["lost once"]);
		await consume(again.sent);
		expect(await projected(`${ledger.userkey}-1`)).toMatchObject({ comment: "lost once" });
		expect(await entries(ledger.stub)).toEqual([]);
	});

	it("a write's backstop alarm covers the hold of the flush after it: no second alarm; going off early, it re-arms for the hold's end", async () => {
		const ledger = await settledLedger(await hookedAppId());
		await changeComment(ledger.stub, "one alarm");
		const captured = capturingQueue();
		const result = await runInDurableObject(ledger.stub, async (_l, state) => {
			// The object's storage, its alarm writes recorded (issue 33: a setAlarm is a storage write, about 0.17 ms).
			const set: number[] = [];
			const storage = new Proxy(state.storage, {
				get(target, prop) {
					if (prop === "setAlarm")
						return (at: number) => {
							set.push(at);
							return target.setAlarm(at);
						};
					const value = Reflect.get(target, prop);
					return typeof value === "function" ? value.bind(target) : value;
				},
			});
			const writer = new LedgerWriter(storage, { appid: ledger.appid, userkey: ledger.userkey }, () => undefined, LEDGER_MIGRATIONS);
			const schedule = new FlushSchedule(state, withBindings(env, { PROJECTION: captured.queue }), writer, storage);
			// As after a write: the backstop, then the flush (here at once, and again when the coalesced one starts).
			const start = Date.now();
			schedule.afterWrite(true);
			await schedule.flush();
			await new Promise((resolve) => setTimeout(resolve, 60));
			// The entry is held until its send's time plus IN_FLIGHT_MS: after the start, before now.
			const afterFlush = {
				set: [...set],
				stored: await state.storage.getAlarm(),
				holdEnds: [start + IN_FLIGHT_MS, Date.now() + IN_FLIGHT_MS],
			};
			// No acknowledgement: the backstop goes off a little before the hold ends, sends nothing and arms itself again.
			await schedule.alarm();
			return { afterFlush, sentAfterAlarm: captured.sent.length, set, stored: await state.storage.getAlarm() };
		});
		expect(captured.sent).toHaveLength(1);
		expect(result.afterFlush.set).toHaveLength(1);
		expect(result.afterFlush.stored).toBe(result.afterFlush.set[0]);
		// The backstop (the write's time plus 30 s) is at most the hold's end, and within the slack of it.
		const [earliestEnd = 0, latestEnd = 0] = result.afterFlush.holdEnds;
		expect(result.afterFlush.stored).toBeGreaterThanOrEqual(earliestEnd - 5_000);
		expect(result.afterFlush.stored).toBeLessThanOrEqual(latestEnd);
		expect(result.sentAfterAlarm).toBe(1);
		expect(result.set).toHaveLength(2);
		expect(result.stored).toBe(result.set[1]);
		expect(result.set[1]).toBeGreaterThanOrEqual(earliestEnd);
		await consume(captured.sent);
		expect(await entries(ledger.stub)).toEqual([]);
	});

	it("the queue refuses the send: the entry stays, postponed with its error, and D1 is untouched", async () => {
		const ledger = await settledLedger(await hookedAppId());
		await changeComment(ledger.stub, "never sent");
		expect(await sendPass(ledger, new Error("Queue send failed: overloaded"))).toEqual([]);
		const [entry] = await entries(ledger.stub);
		expect(entry).toMatchObject({ attempts: 1 });
		expect(entry?.last_error).toContain("overloaded");
		expect(await projected(`${ledger.userkey}-1`)).toMatchObject({ comment: null });
	});

	it("catches up after a burst of conversions through the real queue, in far fewer D1 batches than ledgers", async () => {
		const app = await createOneDatabaseApp();
		const ref = (await app.api<{ userkey: string; referralcode: string }>("register", { email: "burst-ref@x.com" })).body;
		const friends: string[] = [];
		for (let i = 0; i < 12; i++) {
			const f = await app.api<{ userkey: string }>("register", { email: `burst-f${i}@x.com`, referrercode: ref.referralcode });
			friends.push(f.body.userkey);
		}
		// Count the D1 batches that write projection rows, whoever sends them (ledgers or the consumer).
		const proto = Object.getPrototypeOf(env.DB) as { batch: (s: D1PreparedStatement[]) => Promise<unknown> };
		const batch = proto.batch;
		let projectionBatches = 0;
		proto.batch = function (this: D1Database, statements: D1PreparedStatement[]) {
			if (statements.some((s) => String(Reflect.get(s, "statement") ?? "").includes("INSERT INTO rewards"))) projectionBatches++;
			return batch.call(this, statements);
		};
		try {
			const answers = await Promise.all(
				friends.map((userkey, i) =>
					app.api("registerconversionevent", { userkey, eventname: "Signup", customid: `${900 + i}`, growthhack: "SaaS_Referrals" }),
				),
			);
			expect(answers.map((a) => a.status)).toEqual(friends.map(() => 200));
			const answered = Date.now();
			// 12 conversions: a reward in each friend's ledger and 12 in the referrer's, 13 ledgers in all.
			const count = () =>
				env.DB.prepare("SELECT COUNT(*) AS n FROM rewards WHERE appid = ?")
					.bind(app.appid)
					.first<{ n: number }>()
					.then((r) => r?.n ?? 0);
			await until("the projection caught up", count, (n) => n === 24);
			const lagMs = Date.now() - answered;
			console.log(`projection caught up ${lagMs} ms after the burst, in ${projectionBatches} D1 batches`);
			// docs/scaling.md: D1's views lag the ledgers by at most 5 s.
			expect(lagMs).toBeLessThan(5_000);
			// One per ledger flush before (13 and more): now the consumer's batches, a few at most.
			expect(projectionBatches).toBeLessThanOrEqual(4);
		} finally {
			proto.batch = batch;
		}
		for (const userkey of [ref.userkey, ...friends]) {
			await until(
				"the ledger's outbox emptied",
				() => entries(ledgerFor(env, app.appid, userkey)),
				(e) => e.length === 0,
			);
		}
	});

	it("the review queue is fresh right after an admin action: the action writes its own projection", async () => {
		const app = await createOneDatabaseApp();
		const ref = (await app.api<{ userkey: string }>("register", { email: "review-ref@x.com" })).body;
		const stub = ledgerFor(env, app.appid, ref.userkey);
		await stub.grant(app.appid, ref.userkey, [grantOf({ status: "UnderReview", campaignid: app.campaignid })]);
		const list = async (status: string) =>
			(await admin("GET", `/apps/${app.appid}/rewards?status=${status}&userkey=${ref.userkey}`)).body.rewards as { rewarddtlid: string }[];
		const [waiting] = await until(
			"the reward in the review queue",
			() => list("UnderReview"),
			(r) => r.length === 1,
		);
		const done = await admin("POST", `/apps/${app.appid}/rewards/status`, {
			changes: [{ rewarddtlid: waiting?.rewarddtlid, rewardstatus: "Approved", message: "ok" }],
		});
		expect(done.status).toBe(200);
		// Read at once: no wait for the projection queue.
		expect(await list("UnderReview")).toEqual([]);
		expect((await list("Approved")).map((r) => r.rewarddtlid)).toEqual([waiting?.rewarddtlid]);
	});
});
