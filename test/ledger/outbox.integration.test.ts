import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { projectionStatement } from "../../src/db/projection";
import { type FlushHost, flushOutboxOnce, queueProjection, queueWebhook } from "../../src/ledger/outbox";
import { deleteAcked, deleteEntries, NEXT_OUTBOX_ID } from "../../src/ledger/outbox-entries";
import type { LedgerOutboxEntry, RewardRow } from "../../src/ledger/schema";
import { webhookEvent } from "../../src/outbox/events";
import { createApp } from "../support/api";
import { freshLedger, grantOf, hookedAppId } from "./support";

const outboxCount = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n);

describe("UserLedger outbox: D1 projection and webhook events", () => {
	it("a write leaves an alarm as the backstop of its flush, a later write keeps it, and the drained flush clears it", async () => {
		const { appid, userkey, stub } = freshLedger();
		// A ledger with its schema and an empty outbox, so the writes below are quick.
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		expect(await runInDurableObject(stub, (_l, state) => state.storage.getAlarm())).toBeNull();
		// Both writes in one synchronous turn inside the object, so no flush (it starts 25 ms after a write) can run
		// between them, whatever the machine's load: the alarms the object sets are counted, not timed.
		const seen = await runInDurableObject(stub, async (ledger, state) => {
			const set: number[] = [];
			const setAlarm = state.storage.setAlarm.bind(state.storage);
			state.storage.setAlarm = (at, options) => {
				set.push(typeof at === "number" ? at : at.getTime());
				return setAlarm(at, options);
			};
			try {
				const before = Date.now();
				ledger.grant(appid, userkey, [grantOf()]);
				ledger.grant(appid, userkey, [grantOf()]);
				const after = Date.now();
				return { before, after, set, alarm: await state.storage.getAlarm() };
			} finally {
				state.storage.setAlarm = setAlarm;
			}
		});
		// The first write set the backstop 30 s on; the second kept it (setting its own would make two calls).
		expect(seen.set).toHaveLength(1);
		expect(seen.set[0]).toBeGreaterThanOrEqual(seen.before + 30_000);
		expect(seen.set[0]).toBeLessThanOrEqual(seen.after + 30_000);
		expect(seen.alarm).toBe(seen.set[0]);
		expect(await stub.flush()).toMatchObject({ pending: 0 });
		expect(await outboxCount(stub)).toBe(0);
		expect(await runInDurableObject(stub, (_l, state) => state.storage.getAlarm())).toBeNull();
	});

	it("projects every change into D1 rewards and records each event once, enqueued", async () => {
		const { appid, userkey, stub } = freshLedger(await hookedAppId());
		const { rewards } = await stub.grant(appid, userkey, [grantOf({ amount: 12.5, status: "UnderReview" })]);
		const id = rewards[0]!.rewarddtlid;
		expect(await stub.flush()).toMatchObject({ pending: 0 });
		expect(await outboxCount(stub)).toBe(0);

		const row = await env.DB.prepare("SELECT * FROM rewards WHERE rewarddtlid = ?").bind(id).first();
		expect(row).toMatchObject({
			appid,
			userkey,
			reward: 12.5,
			rewardstatus: "UnderReview",
			redeemed: 0,
			rewardtype: "InstoreCredits",
			version: 1,
		});

		await stub.changeStatuses([{ rewarddtlid: id, status: "Approved", message: "ok" }]);
		await stub.redeemByAmount({ amount: 2.5 });
		await stub.flush();
		expect(
			await env.DB.prepare("SELECT rewardstatus, redeemed, comment, version FROM rewards WHERE rewarddtlid = ?").bind(id).first(),
		).toEqual({
			rewardstatus: "Approved",
			redeemed: 2.5,
			comment: "ok",
			version: 3,
		});

		const { results } = await env.DB.prepare(
			"SELECT eventid, type, payload, enqueued_at FROM outbox_events WHERE appid = ? ORDER BY eventid",
		)
			.bind(appid)
			.all<{ eventid: string; type: string; payload: string; enqueued_at: string | null }>();
		expect(results.map((e) => [e.eventid, e.type])).toEqual([
			[`evt_${appid}_${userkey}_1_v1`, "reward.created"],
			[`evt_${appid}_${userkey}_1_v2`, "reward.status_changed"],
			[`evt_${appid}_${userkey}_1_v3`, "reward.redeemed"],
		]);
		expect(results.every((e) => e.enqueued_at !== null)).toBe(true);
		expect(JSON.parse(results[2]!.payload)).toMatchObject({
			userkey,
			redeemedamount: 2.5,
			reward: { rewarddtlid: id, rewardstatus: "Approved" },
		});
	});

	it("records no webhook event for an app without a webhook URL, and still writes the projection", async () => {
		// newAppId() names no app in D1: no webhook URL, as for an app that never set one.
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf(), grantOf()]);
		await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Rejected", message: "no" }]);
		expect(await stub.flush()).toMatchObject({ pending: 0 });
		expect(await outboxCount(stub)).toBe(0);
		const projected = await env.DB.prepare("SELECT rewarddtlid, version FROM rewards WHERE userkey = ? ORDER BY rewarddtlid")
			.bind(userkey)
			.all();
		expect(projected.results).toEqual([
			{ rewarddtlid: rewards[0]!.rewarddtlid, version: 2 },
			{ rewarddtlid: rewards[1]!.rewarddtlid, version: 1 },
		]);
		const events = await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE appid = ?").bind(appid).first();
		expect(events).toEqual({ n: 0 });
	});

	it("the flush that starts after a write delivers without being asked", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf()]);
		const id = rewards[0]!.rewarddtlid;
		let row: unknown = null;
		for (let i = 0; i < 50 && !row; i++) {
			await new Promise((r) => setTimeout(r, 20));
			row = await env.DB.prepare("SELECT version FROM rewards WHERE rewarddtlid = ?").bind(id).first();
		}
		expect(row).toEqual({ version: 1 });
	});

	it("a change committed while the flush's D1 batch is in flight keeps its projection entry for the next pass", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		const d1Version = () =>
			env.DB.prepare("SELECT version FROM rewards WHERE appid = ? AND userkey = ?").bind(appid, userkey).first<{ version: number }>();
		expect(await d1Version()).toEqual({ version: 1 });
		const seen = await runInDurableObject(stub, async (_l, state) => {
			const sql = state.storage.sql;
			// Raw writes, so no flush of the ledger's own starts: this test drives the passes.
			const raise = (version: number) =>
				state.storage.transactionSync(() => {
					sql.exec("UPDATE rewards SET version = ? WHERE seq = 1", version);
					queueProjection(sql, 1, version, Date.now());
				});
			raise(2);
			let inFlight = true;
			// D1 whose batch lets a change commit (version 3) after the pass read version 2 and before its answer.
			const db = new Proxy(env.DB, {
				get: (target, prop) =>
					prop === "batch"
						? (statements: D1PreparedStatement[]) => {
								if (inFlight) raise(3);
								inFlight = false;
								return target.batch(statements);
							}
						: Reflect.get(target, prop).bind(target),
			});
			const host: FlushHost = {
				sql,
				transactionSync: (fn) => state.storage.transactionSync(fn),
				env: { ...env, DB: db },
				appid,
				userkey,
				assignCoupon: () => {
					throw new Error("no coupons here");
				},
			};
			const first = await flushOutboxOnce(host);
			const left = sql.exec<{ version: number }>("SELECT version FROM outbox WHERE kind = 'projection'").toArray();
			const second = await flushOutboxOnce(host);
			const after = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n;
			return { first: first.done, left, second: second.done, after };
		});
		// The first pass wrote version 2 and left the entry (now version 3); the second wrote 3 and removed it.
		expect(seen).toEqual({ first: 1, left: [{ version: 3 }], second: 1, after: 0 });
		expect(await d1Version()).toEqual({ version: 3 });
	});

	it("an entry costs 1 row written (its row, keyed by its ref), and a stale delete never removes a newer entry that took its id", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		await runInDurableObject(stub, (_l, state) => {
			const sql = state.storage.sql;
			const read = () => sql.exec<LedgerOutboxEntry>("SELECT * FROM outbox ORDER BY id").toArray();
			// Issue 33: 4 rows before schema step 9 (AUTOINCREMENT, an index on the due time), 2 before step 11 (the ref's index).
			const written = sql.exec(
				`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'webhook', 'webhook:evt_rows', '{}', 0, '')`,
			).rowsWritten;
			expect(written).toBe(1);
			const [first] = read();
			if (!first) throw new Error("no entry");
			sql.exec("DELETE FROM outbox WHERE ref = ?", first.ref);
			// The next entry may take the same id: a delete or acknowledgement of the first one (id and ref) leaves it.
			queueWebhook(sql, webhookEvent(appid, "reward.created", { userkey }), Date.now());
			const [second] = read();
			expect(second?.id).toBe(first.id);
			deleteEntries(sql, [first]);
			deleteAcked(sql, [{ id: first.id, ref: first.ref, version: null }]);
			expect(read()).toEqual([second]);
		});
	});

	it("an older projection never overwrites a newer one", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf()]);
		await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Rejected", message: "fraud" }]);
		await stub.flush();
		const stale = await runInDurableObject(stub, (_l, state) => {
			const row = state.storage.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = 1").one();
			return { ...row, status: "Approved", version: 1 };
		});
		await projectionStatement(env.DB, appid, userkey, stale).run();
		expect(
			await env.DB.prepare("SELECT rewardstatus, version FROM rewards WHERE rewarddtlid = ?").bind(rewards[0]!.rewarddtlid).first(),
		).toEqual({
			rewardstatus: "Rejected",
			version: 2,
		});
	});
});

describe("UserLedger outbox: coupons", () => {
	async function couponCampaign(codes: string[]) {
		const app = await createApp({ distribution: "Coupon", campaignname: "Coupons" });
		if (codes.length) {
			await env.DB.batch(
				codes.map((c) =>
					env.DB.prepare("INSERT INTO coupons (campaignid, coupon, couponname) VALUES (?, ?, 'Ten off')").bind(app.campaignid, c),
				),
			);
		}
		return app;
	}
	const couponGrant = (campaignid: number) => grantOf({ rewardtype: "Coupon", campaignid, rewardunit: "%" });

	it("gives each reward a distinct code from its campaign's pool, keyed by reward", async () => {
		const { appid, campaignid } = await couponCampaign(["A1", "A2", "A3"]);
		const users = [freshLedger(appid), freshLedger(appid)];
		const [one, two] = users;
		await one!.stub.grant(appid, one!.userkey, [couponGrant(campaignid), couponGrant(campaignid)]);
		await two!.stub.grant(appid, two!.userkey, [couponGrant(campaignid)]);
		await Promise.all(users.map((u) => u.stub.flush()));
		const codes = [...(await one!.stub.listRewards()), ...(await two!.stub.listRewards())].map((r) => r.coupon);
		expect(codes.sort()).toEqual(["A1", "A2", "A3"]);
		expect((await one!.stub.listRewards())[0]).toMatchObject({ couponname: "Ten off", version: 2 });
		const { results } = await env.DB.prepare("SELECT coupon, reward_key FROM coupons WHERE campaignid = ? ORDER BY coupon")
			.bind(campaignid)
			.all<{ reward_key: string }>();
		expect(results.every((r) => r.reward_key !== null)).toBe(true);
		expect(new Set(results.map((r) => r.reward_key)).size).toBe(3);
		// A replayed claim finds the same code rather than a new one.
		expect(await outboxCount(one!.stub)).toBe(0);
	});

	it("an empty pool is a logged waiting state, retried later, and served once codes arrive", async () => {
		const { appid, campaignid } = await couponCampaign([]);
		const { userkey, stub } = freshLedger(appid);
		const { rewards } = await stub.grant(appid, userkey, [couponGrant(campaignid)]);
		const report = await stub.flush();
		expect(report.pending).toBe(1);
		expect((await stub.getReward(rewards[0]!.rewarddtlid))?.coupon).toBe("");
		const entry = await runInDurableObject(stub, (_l, state) =>
			state.storage.sql
				.exec<{ kind: string; next_attempt_at: number; last_error: string }>("SELECT kind, next_attempt_at, last_error FROM outbox")
				.one(),
		);
		expect(entry.kind).toBe("coupon");
		expect(entry.last_error).toBe("coupon pool empty");
		expect(entry.next_attempt_at).toBeGreaterThan(Date.now() + 9 * 60_000);
		const alarm = await runInDurableObject(stub, (_l, state) => state.storage.getAlarm());
		expect(alarm).toBe(entry.next_attempt_at);

		await env.DB.prepare("INSERT INTO coupons (campaignid, coupon) VALUES (?, 'LATE1')").bind(campaignid).run();
		// Make the waiting entry due, as the alarm would find it ten minutes later.
		await runInDurableObject(stub, (_l, state) => state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0"));
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		expect((await stub.getReward(rewards[0]!.rewarddtlid))?.coupon).toBe("LATE1");
		// The alarm's flush sends the reward's new projection through the projection queue: its entry goes once the consumer acknowledges.
		await vi.waitFor(async () => expect(await outboxCount(stub)).toBe(0), { timeout: 10_000, interval: 50 });
	});
});
