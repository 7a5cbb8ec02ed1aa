import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProjectionMessage } from "../../src/db/projection-batch";
import { customIdToken } from "../../src/domain/ids";
import { grantRewards } from "../../src/ledger/grant";
import { InFlight } from "../../src/ledger/in-flight";
import { queueProjection, queueWebhook } from "../../src/ledger/outbox";
import { ledgerFor } from "../../src/ledger/stub";
import type { ConversionAnnouncement } from "../../src/ledger/types";
import { webhookEvent } from "../../src/outbox/events";
import { hookUrl, received, uniqueKey } from "../outbox/support";
import { admin, createApp } from "../support/api";
import { capturedFlushPass, consumeProjection } from "../support/projection";
import { until } from "../support/until";
import { freshLedger, grantOf, hookedAppId } from "./support";

/**
 * Issue 33, rows written per conversion: the `conversion.recorded` event
 * travels inside the projection entry of a reward its conversion created
 * (src/ledger/outbox.ts, queueProjection), not in an outbox row of its own.
 * It still confirms the grants in the projection's D1 batch, reaches the
 * webhook receiver, is redacted after an erasure, and an entry changed while
 * its message is in flight neither loses it nor writes it twice. Real
 * ledgers, D1, queues and receiver; projection messages captured and handed
 * to the consumer by hand where the test chooses the order.
 */

type Stub = ReturnType<typeof ledgerFor>;
type Entry = { id: number; kind: string; ref: string; version: number; payload: string };

const entries = (stub: Stub) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql.exec<Entry>("SELECT id, kind, ref, version, payload FROM outbox ORDER BY id").toArray(),
	);

const carried = (entry: Entry | undefined) =>
	entry ? (JSON.parse(entry.payload) as { event?: { eventid: string } }).event?.eventid : undefined;

/** Logs every write of the ledger's outbox table from now on (op, kind, ref, whether the row carries an event). */
const logOutboxWrites = (stub: Stub) =>
	runInDurableObject(stub, (_l, state) => {
		const sql = state.storage.sql;
		sql.exec("CREATE TABLE outbox_writes (op TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, event INTEGER NOT NULL)");
		for (const [op, row] of [
			["INSERT", "NEW"],
			["UPDATE", "NEW"],
			["DELETE", "OLD"],
		])
			sql.exec(
				`CREATE TRIGGER outbox_writes_${op} AFTER ${op} ON outbox BEGIN INSERT INTO outbox_writes
				 VALUES ('${op}', ${row}.kind, ${row}.ref, ${row}.payload ->> '$.event' IS NOT NULL); END`,
			);
	});

const outboxWrites = (stub: Stub) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql
			.exec<{ op: string; kind: string; ref: string; event: number }>("SELECT * FROM outbox_writes ORDER BY rowid")
			.toArray()
			.map((w) => `${w.op} ${w.kind}${w.ref.startsWith("webhook:evt_conversion_") ? " conversion" : ""}${w.event ? " +event" : ""}`),
	);

const recordedIn = (messages: ProjectionMessage[]) => messages.flatMap((m) => m.rewards.flatMap((r) => (r.event ? [r.event.eventid] : [])));

const storedEvents = (eventid: string) =>
	env.DB.prepare("SELECT payload FROM outbox_events WHERE eventid = ?").bind(eventid).all<{ payload: string }>();

const announcementOf = (appid: string, customid: string, extra: Record<string, unknown> = {}): ConversionAnnouncement => ({
	eventid: `evt_conversion_${appid}_${customid}`,
	payload: { customid, eventname: "Purchase", userkey: "u_friend", referrerkey: null, extrainfo: "", ...extra },
	otherRewards: [],
});

/** Grants inside the object's storage, without the FlushSchedule's own flush, so the test sends the entries itself. */
const grantQuietly = (stub: Stub, appid: string, userkey: string, announcement?: ConversionAnnouncement, grant = grantOf()) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.transactionSync(() => grantRewards({ sql: state.storage.sql, appid, userkey, nowMs: Date.now() }, [grant], announcement)),
	);

/** A fresh ledger with its tables and one reward (seq 1), its entries delivered through the real queue. */
async function settledLedger() {
	const ledger = freshLedger(await hookedAppId());
	await ledger.stub.grant(ledger.appid, ledger.userkey, [grantOf({ usertype: "Friend" })]);
	await until(
		"the first grant's entries acknowledged",
		() => entries(ledger.stub),
		(e) => e.length === 0,
	);
	return ledger;
}

/** The reward the quiet grant after settledLedger creates. */
const SEQ = 2;

/** Raises reward SEQ's version without a flush (a status change, a comment): its projection entry is due again. */
const changeReward = (stub: Stub, comment: string) =>
	runInDurableObject(stub, (_l, state) => {
		const sql = state.storage.sql;
		const v = sql
			.exec<{ v: number }>("UPDATE rewards SET comment = ?, version = version + 1 WHERE seq = ? RETURNING version AS v", comment, SEQ)
			.one().v;
		queueProjection(sql, SEQ, v, Date.now());
		return v;
	});

const pendingGrants = async (appid: string, customid: string) =>
	(
		await env.DB.prepare("SELECT grants_pending FROM conversion_events WHERE appid = ? AND customid = ?")
			.bind(appid, customid)
			.first<{ grants_pending: number | null }>()
	)?.grants_pending;

describe("conversion.recorded folded into the projection entry", { timeout: 60_000 }, () => {
	it("a conversion's event reaches the receiver and confirms its grants, with one outbox row fewer in the friend's ledger", async () => {
		const key = uniqueKey("fold");
		const app = await createApp(
			{
				rewardrules: [
					{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
					{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
				],
			},
			{ webhookurl: hookUrl(key) },
		);
		const ref = (await app.api<{ userkey: string; referralcode: string }>("register", { email: "fold-ref@x.com" })).body;
		const friend = (await app.api<{ userkey: string }>("register", { email: "fold-fr@x.com", referrercode: ref.referralcode })).body;
		const purchase = (customid: string) =>
			app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals" });
		expect((await purchase("fold-1")).status).toBe(200);
		const friendLedger = ledgerFor(env, app.appid, friend.userkey);
		await until(
			"the first conversion's entries acknowledged",
			() => entries(friendLedger),
			(e) => e.length === 0,
		);
		await logOutboxWrites(friendLedger);

		expect((await purchase("fold-2")).body).toMatchObject({ success: true, rewardscreated: 2 });
		const recorded = (
			await until(
				"the receiver got conversion.recorded of fold-2",
				() => received(key),
				(got) => got.some((r) => JSON.parse(r.body).type === "conversion.recorded" && JSON.parse(r.body).data.customid === "fold-2"),
			)
		).filter((r) => JSON.parse(r.body).type === "conversion.recorded" && JSON.parse(r.body).data.customid === "fold-2");
		expect(recorded).toHaveLength(1);
		expect(recorded[0]?.headers["webhook-id"]).toBe(`evt_conversion_${app.appid}_${customIdToken("fold-2")}`);
		expect(JSON.parse(recorded[0]!.body).data.rewards.map((r: { usertype: string }) => r.usertype)).toEqual(["Friend", "Referrer"]);
		expect(await pendingGrants(app.appid, "fold-2")).toBeNull();
		await until(
			"the friend's outbox drained",
			() => entries(friendLedger),
			(e) => e.length === 0,
		);
		// Before: INSERT projection, INSERT webhook (reward.created), INSERT webhook conversion, and three DELETEs. Now the
		// event rides in the projection entry's insert (the friend's rewards are written once the referrer answered).
		expect((await outboxWrites(friendLedger)).sort()).toEqual(
			["INSERT projection +event", "INSERT webhook", "DELETE projection +event", "DELETE webhook"].sort(),
		);
	});

	it("a grant that announces its conversion alone writes ONE outbox row: the projection entry with the event", async () => {
		const ledger = await settledLedger();
		await logOutboxWrites(ledger.stub);
		const announcement = announcementOf(ledger.appid, "alone-1");
		await grantQuietly(ledger.stub, ledger.appid, ledger.userkey, announcement, grantOf({ webhooks: false, rewardemail: false }));
		expect(await outboxWrites(ledger.stub)).toEqual(["INSERT projection +event"]);
		const messages = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey);
		expect(recordedIn(messages)).toEqual([announcement.eventid]);
		await consumeProjection(messages);
		expect((await storedEvents(announcement.eventid)).results).toHaveLength(1);
		expect((await entries(ledger.stub)).filter((e) => carried(e))).toEqual([]);
	});

	it("an entry changed while its event is in flight: the event is not sent again, and not lost, whichever acknowledgement comes first", async () => {
		for (const order of ["older first", "newer first"] as const) {
			const ledger = await settledLedger();
			const held = new InFlight();
			const announcement = announcementOf(ledger.appid, `race-${order.replace(" ", "-")}`);
			await grantQuietly(ledger.stub, ledger.appid, ledger.userkey, announcement, grantOf({ webhooks: false, rewardemail: false }));
			const first = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, held);
			expect(recordedIn(first)).toEqual([announcement.eventid]);
			// A change committed before the acknowledgement: the projection goes again at once, the event does not.
			const v2 = await changeReward(ledger.stub, `changed ${order}`);
			const second = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, held);
			expect(second.flatMap((m) => m.rewards.map((r) => r.row.version))).toEqual([v2]);
			expect(recordedIn(second)).toEqual([]);
			await consumeProjection(order === "older first" ? first : second);
			await consumeProjection(order === "older first" ? second : first);
			expect((await storedEvents(announcement.eventid)).results).toHaveLength(1);
			// The newest version is projected, and what is left in the outbox no longer carries the event.
			const row = await env.DB.prepare("SELECT version FROM rewards WHERE rewarddtlid = ?").bind(`${ledger.userkey}-${SEQ}`).first();
			expect(row).toEqual({ version: v2 });
			expect((await entries(ledger.stub)).filter((e) => carried(e))).toEqual([]);
		}
	});

	it("an in-flight send whose message is lost: the entry sends its event again once the hold ends", async () => {
		const ledger = await settledLedger();
		const announcement = announcementOf(ledger.appid, "lost-1");
		await grantQuietly(ledger.stub, ledger.appid, ledger.userkey, announcement, grantOf({ webhooks: false, rewardemail: false }));
		const lost = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, new InFlight());
		expect(recordedIn(lost)).toEqual([announcement.eventid]);
		await changeReward(ledger.stub, "after the lost send");
		// The ledger was evicted (its holds forgotten) or the hold ended: the event goes with the next send.
		const again = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, new InFlight());
		expect(recordedIn(again)).toEqual([announcement.eventid]);
		await consumeProjection(again);
		expect((await storedEvents(announcement.eventid)).results).toHaveLength(1);
		expect(await entries(ledger.stub)).toEqual([]);
	});

	it("an event folded into an entry already in flight without it stays after that send's acknowledgement, and goes next", async () => {
		const ledger = await settledLedger();
		const held = new InFlight();
		await grantQuietly(ledger.stub, ledger.appid, ledger.userkey, undefined, grantOf({ webhooks: false, rewardemail: false }));
		const before = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, held);
		expect(recordedIn(before)).toEqual([]);
		// An event that joins an entry already in flight without it (queueProjection's upsert keeps the first event).
		const event = webhookEvent(
			ledger.appid,
			"conversion.recorded",
			{ customid: "late-1", rewards: [] },
			`evt_conversion_${ledger.appid}_late-1`,
		);
		await runInDurableObject(ledger.stub, (_l, state) => {
			const sql = state.storage.sql;
			const { version } = sql.exec<{ version: number }>("SELECT version FROM rewards WHERE seq = ?", SEQ).one();
			queueProjection(sql, SEQ, version, Date.now(), event);
		});
		await consumeProjection(before);
		const [left] = await entries(ledger.stub);
		expect(carried(left)).toBe(event.eventid);
		const next = await capturedFlushPass(ledger.stub, ledger.appid, ledger.userkey, new InFlight());
		expect(recordedIn(next)).toEqual([event.eventid]);
		await consumeProjection(next);
		expect((await storedEvents(event.eventid)).results).toHaveLength(1);
		expect(await entries(ledger.stub)).toEqual([]);
	});

	it("an old-format conversion.recorded entry of its own is still delivered and confirms its grants", async () => {
		const key = uniqueKey("fold-old");
		const app = await createApp({}, { webhookurl: hookUrl(key) });
		const ref = (await app.api<{ userkey: string; referralcode: string }>("register", { email: "old-ref@x.com" })).body;
		const friend = (await app.api<{ userkey: string }>("register", { email: "old-fr@x.com", referrercode: ref.referralcode })).body;
		const conversion = { userkey: friend.userkey, eventname: "Signup", customid: "old-1", growthhack: "SaaS_Referrals" };
		expect((await app.api("registerconversionevent", conversion)).status).toBe(200);
		const friendLedger = ledgerFor(env, app.appid, friend.userkey);
		await until(
			"the conversion's entries acknowledged",
			() => entries(friendLedger),
			(e) => e.length === 0,
		);
		// As a ledger written before this change holds it: the event in a webhook entry, its conversion not yet confirmed.
		const eventid = `evt_conversion_${app.appid}_old-1-legacy`;
		await env.DB.prepare("UPDATE conversion_events SET grants_pending = 1 WHERE appid = ? AND customid = ?").bind(app.appid, "old-1").run();
		const event = webhookEvent(app.appid, "conversion.recorded", { customid: "old-1", legacy: true, rewards: [] }, eventid);
		await runInDurableObject(friendLedger, (_l, state) => queueWebhook(state.storage.sql, event, Date.now()));
		const messages = await capturedFlushPass(friendLedger, app.appid, friend.userkey);
		expect(messages.flatMap((m) => m.webhooks.map((w) => w.event.eventid))).toEqual([eventid]);
		await consumeProjection(messages);
		expect(await pendingGrants(app.appid, "old-1")).toBeNull();
		expect(await entries(friendLedger)).toEqual([]);
		await until(
			"the receiver got the legacy event",
			() => received(key),
			(got) => got.some((r) => r.headers["webhook-id"] === eventid),
		);
	});

	it("erasure: a folded event naming the erased person is redacted in the ledger, and a copy sent before is held back", async () => {
		const n = crypto.randomUUID().slice(0, 8);
		const bobEmail = `fold.bob.${n}@example.com`;
		const app = await createApp({}, { webhookurl: hookUrl(uniqueKey("fold-erase")) });
		const ann = (await app.api<{ userkey: string; referralcode: string }>("register", { email: `fold.ann.${n}@example.com` })).body;
		const bob = (await app.api<{ userkey: string }>("register", { email: bobEmail, referrercode: ann.referralcode })).body;
		const conversion = { userkey: bob.userkey, eventname: "Signup", customid: `erase-signup-${n}`, growthhack: "SaaS_Referrals" };
		expect((await app.api("registerconversionevent", conversion)).status).toBe(200);
		const annLedger = ledgerFor(env, app.appid, ann.userkey);
		for (const userkey of [ann.userkey, bob.userkey])
			await until(
				"the signup's entries acknowledged",
				() => entries(ledgerFor(env, app.appid, userkey)),
				(e) => e.length === 0,
			);
		// Ann's reward of Bob's conversion, announced from her ledger (only the referrer rewarded), naming Bob.
		const announcement = announcementOf(app.appid, `erase-${n}`, { userkey: bob.userkey, extrainfo: `gift for ${bobEmail}` });
		await grantQuietly(annLedger, app.appid, ann.userkey, announcement, grantOf({ webhooks: false, rewardemail: false }));
		const inFlight = await capturedFlushPass(annLedger, app.appid, ann.userkey);
		expect(JSON.stringify(recordedIn(inFlight))).toContain(announcement.eventid);
		expect(JSON.stringify(inFlight)).toContain(bobEmail);
		// D1 refuses the event unless it names Bob: the erasure's own flush (redacted) fails, the stale copy would pass.
		const trigger = `fold_${crypto.randomUUID().replaceAll("-", "")}`;
		await env.DB.prepare(
			`CREATE TRIGGER ${trigger} BEFORE INSERT ON outbox_events WHEN NEW.eventid = '${announcement.eventid}'
			 AND instr(NEW.payload, '${bobEmail}') = 0 BEGIN SELECT RAISE(ABORT, 'injected: D1 refused the flush'); END`,
		).run();
		try {
			expect((await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`)).status).toBe(200);
			const [entry] = (await entries(annLedger)).filter((e) => carried(e));
			expect(entry?.payload).not.toContain(bobEmail);
			await consumeProjection(inFlight);
			expect((await storedEvents(announcement.eventid)).results).toEqual([]);
			// Held back: the projection went, the entry stays with its (redacted) event.
			expect(carried((await entries(annLedger)).find((e) => carried(e)))).toBe(announcement.eventid);
		} finally {
			await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
		}
		await annLedger.flush();
		const stored = (await storedEvents(announcement.eventid)).results;
		expect(stored).toHaveLength(1);
		expect(stored[0]?.payload).not.toContain(bobEmail);
		expect(stored[0]?.payload).toContain("[erased]");
		expect(await entries(annLedger)).toEqual([]);
	});
});
