import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { queueProjection, queueWebhook } from "../../src/ledger/outbox";
import { ledgerFor } from "../../src/ledger/stub";
import { webhookEvent } from "../../src/outbox/events";
import { hookUrl, uniqueKey } from "../outbox/support";
import { admin, createApp } from "../support/api";
import { capturedFlushPass, consumeProjection } from "../support/projection";
import { until } from "../support/until";

/**
 * An erasure racing a projection-queue message (issue 33): a ledger's flush
 * sent its records (payloads that name a person) to the projection queue
 * just before that person was erased; the consumer writes them only after
 * D1 was erased. Nothing of the person may land in D1 then. Real ledgers,
 * real D1, the real admin erasure; the message is captured and handed to
 * the consumer by hand, so the test chooses when it arrives.
 */

type Ledger = ReturnType<typeof ledgerFor>;

const pending = (ledger: Ledger) =>
	runInDurableObject(ledger, (_l, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n);

async function scanD1(needles: string[]): Promise<string[]> {
	const tables = await env.DB.prepare(
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
	).all<{ name: string }>();
	const found: string[] = [];
	for (const { name } of tables.results) {
		const text = JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results).toLowerCase();
		for (const needle of needles) if (text.includes(needle.toLowerCase())) found.push(`${needle} in ${name}`);
	}
	return found;
}

/** Ann refers Bob; Bob's conversion rewards both; then a change in Ann's ledger that names Bob is sent, captured. */
async function messageNamingBob() {
	const n = crypto.randomUUID().slice(0, 8);
	const bobTraces = [`race.bob.${n}@example.com`, `Racey Bob ${n}`];
	const app = await createApp({}, { webhookurl: hookUrl(uniqueKey("race")) });
	const ann = (await app.api("register", { email: `ann.${n}@example.com`, name: "Ann" })).body;
	const bob = (await app.api("register", { email: bobTraces[0], name: bobTraces[1], referrercode: ann.referralcode })).body;
	const conversion = { userkey: bob.userkey, eventname: "Signup", customid: `race-${n}`, growthhack: "SaaS_Referrals" };
	expect((await app.api("registerconversionevent", conversion)).status).toBe(200);
	const annLedger = ledgerFor(env, app.appid, ann.userkey);
	// Everything so far reached D1 through the real queue (and was acknowledged).
	for (const userkey of [ann.userkey, bob.userkey]) {
		await until(
			"the ledger's outbox drained",
			() => pending(ledgerFor(env, app.appid, userkey)),
			(left) => left === 0,
		);
	}
	// A change in Ann's ledger that names Bob (its friend's snapshot): queued, then sent by a flush pass.
	const event = webhookEvent(app.appid, "reward.status_changed", {
		userkey: ann.userkey,
		reward: { friendemail: bobTraces[0], friendname: bobTraces[1] },
	});
	await runInDurableObject(annLedger, (_l, state) => {
		const sql = state.storage.sql;
		queueWebhook(sql, event, Date.now());
		const version = sql.exec<{ v: number }>("UPDATE rewards SET version = version + 1 WHERE seq = 1 RETURNING version AS v").one().v;
		queueProjection(sql, 1, version, Date.now());
	});
	const inFlight = await capturedFlushPass(annLedger, app.appid, ann.userkey);
	expect(inFlight.flatMap((m) => m.webhooks)).toHaveLength(1);
	expect(JSON.stringify(inFlight)).toContain(bobTraces[0]);
	return { app, ann, bob, bobTraces, annLedger, eventid: event.eventid, inFlight };
}

const storedPayload = (eventid: string) =>
	env.DB.prepare("SELECT payload FROM outbox_events WHERE eventid = ?").bind(eventid).first<{ payload: string }>();

describe("erasure racing the projection queue", { timeout: 60_000 }, () => {
	it("a message sent before the erasure and written after it: the erasure's own flush wrote the event first, redacted", async () => {
		const { app, bob, bobTraces, eventid, inFlight } = await messageNamingBob();
		expect((await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`)).status).toBe(200);
		expect(await scanD1(bobTraces)).toEqual([]);

		const result = await consumeProjection(inFlight);
		expect(result.explicitAcks).toHaveLength(inFlight.length);
		expect(await scanD1(bobTraces)).toEqual([]);
		expect((await storedPayload(eventid))?.payload).toContain('"friendemail":""');
	});

	it("the erasure's flush failed: the message's webhook event is held back, not acknowledged, and goes again redacted", async () => {
		const { app, bob, bobTraces, annLedger, eventid, inFlight } = await messageNamingBob();
		// D1 refuses the event's insert unless it names Bob: the ledger's flush (redacted) fails, the stale copy would pass.
		const trigger = `race_${crypto.randomUUID().replaceAll("-", "")}`;
		await env.DB.prepare(
			`CREATE TRIGGER ${trigger} BEFORE INSERT ON outbox_events WHEN NEW.eventid = '${eventid}'
			 AND instr(NEW.payload, '${bobTraces[0]}') = 0 BEGIN SELECT RAISE(ABORT, 'injected: D1 refused the flush'); END`,
		).run();
		try {
			expect((await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`)).status).toBe(200);
			expect(await storedPayload(eventid)).toBeNull();

			const result = await consumeProjection(inFlight);
			// Written: the reward row; held back: the event that may name Bob (its entry stays in Ann's ledger).
			expect(await scanD1(bobTraces)).toEqual([]);
			expect(await storedPayload(eventid)).toBeNull();
			expect(result.explicitAcks).toHaveLength(inFlight.length);
			expect(await pending(annLedger)).toBe(1);
		} finally {
			await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
		}
		// The ledger delivers its own, redacted copy.
		await annLedger.flush();
		expect((await storedPayload(eventid))?.payload).toContain('"friendemail":""');
		expect(await scanD1(bobTraces)).toEqual([]);
	});
});
