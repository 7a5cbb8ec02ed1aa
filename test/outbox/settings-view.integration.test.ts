import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { insertOutboxEvent } from "../../src/db/outbox-events";
import { outboxMessage, webhookEvent } from "../../src/outbox/events";
import { attemptsOf, createOutboxApp, eventRow, faultyDb, hookUrl, received, recordWebhook, runBatch, uniqueKey } from "./support";

afterEach(() => {
	vi.restoreAllMocks();
});

/**
 * A clock for the consumer's settings cache that jumps `stepMs` ahead at every
 * D1 answer: time passes while the batch waits on the database (and, in
 * production, on slow endpoints), so a cache entry valid when the batch looked
 * its apps up has expired by the time it attempts them (issue 36).
 */
function clockMovedByD1(stepMs: number) {
	let t = Date.now();
	const db = new Proxy(env.DB, {
		get(target, prop) {
			const value = Reflect.get(target, prop);
			if (prop === "batch") {
				return async (statements: D1PreparedStatement[]) => {
					const answer = await target.batch(statements);
					t += stepMs;
					return answer;
				};
			}
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return { now: () => t, runEnv: { ...env, DB: db } };
}

async function webhookApp(name: string) {
	const key = uniqueKey(name);
	const app = await createOutboxApp({ webhookurl: hookUrl(key) });
	return { key, app };
}

describe("one view of each app per consumer batch (issue 36)", () => {
	it("delivers a live app's webhook whose cached settings expire between the batch's lookup and its attempt", async () => {
		const { key, app } = await webhookApp("expiry-mid-batch");
		// A first batch caches the app's settings in this isolate.
		const first = await recordWebhook(app.appid, "reward.created", { n: 1 });
		await runBatch([{ body: outboxMessage(first) }]);
		expect(await received(key)).toHaveLength(1);

		// The next batch finds them cached; 31 s pass during its D1 round trip (the cache keeps entries 30 s).
		const clock = clockMovedByD1(31_000);
		const second = await recordWebhook(app.appid, "reward.created", { n: 2 });
		const { result, ids } = await runBatch([{ body: outboxMessage(second) }], clock.runEnv, clock.now);

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(await attemptsOf(second.eventid)).toEqual([expect.objectContaining({ outcome: "delivered", response_code: 200, error: null })]);
		expect((await received(key)).map((r) => r.headers["webhook-id"])).toEqual([first.eventid, second.eventid]);
	});

	it("decides every message of a batch with the same view, for carried and by-id messages alike", async () => {
		const { key, app } = await webhookApp("expiry-mixed");
		const warm = await recordWebhook(app.appid, "reward.created", { n: 0 });
		await runBatch([{ body: outboxMessage(warm) }]);

		const clock = clockMovedByD1(31_000);
		const events = await Promise.all([1, 2, 3].map((n) => recordWebhook(app.appid, "reward.created", { n })));
		const { result, ids } = await runBatch(
			[{ body: outboxMessage(events[0]!) }, { body: { eventid: events[1]!.eventid } }, { body: outboxMessage(events[2]!) }],
			clock.runEnv,
			clock.now,
		);

		expect(result.explicitAcks.sort()).toEqual([...ids].sort());
		for (const e of events) expect(await attemptsOf(e.eventid)).toEqual([expect.objectContaining({ outcome: "delivered" })]);
		expect(await received(key)).toHaveLength(4);
	});

	it("says 'the app no longer exists' only when D1 has no such app", async () => {
		const event = webhookEvent(`app_gone_${crypto.randomUUID().slice(0, 8)}`, "reward.created", { n: 1 });
		await insertOutboxEvent(env.DB, event).run();

		const carried = await runBatch([{ body: outboxMessage(event) }]);
		expect(carried.result.explicitAcks).toEqual([carried.ids[0]]);
		expect(await attemptsOf(event.eventid)).toEqual([expect.objectContaining({ outcome: "skipped", error: "the app no longer exists" })]);

		const byId = webhookEvent(`app_gone_${crypto.randomUUID().slice(0, 8)}`, "reward.created", { n: 2 });
		await insertOutboxEvent(env.DB, byId).run();
		await runBatch([{ body: { eventid: byId.eventid } }]);
		expect(await attemptsOf(byId.eventid)).toEqual([expect.objectContaining({ outcome: "skipped", error: "the app no longer exists" })]);
	});
});

describe("one message's failure stays its own", () => {
	it("retries only the message whose breaker claim hit a D1 error; the others are delivered, logged and acked once", async () => {
		const errors = vi.spyOn(console, "error").mockImplementation(() => {});
		const healthy = await webhookApp("claim-healthy");
		const probing = await webhookApp("claim-probing");
		// The probing app's endpoint has failed often enough that its next attempt is a probe, claimed with a write.
		// Its cool-down ended a minute ago: half-open.
		await env.DB.prepare(
			`INSERT INTO webhook_breakers (appid, endpoint, failures, opens, open_until, last_error, version, updated_at)
			 VALUES (?, ?, 5, 1, ?, 'HTTP 500', 1, ?)`,
		)
			.bind(probing.app.appid, hookUrl(probing.key), Date.now() - 60_000, new Date().toISOString())
			.run();
		const good = await recordWebhook(healthy.app.appid, "reward.created", { n: 1 });
		const held = await recordWebhook(probing.app.appid, "reward.created", { n: 2 });
		const db = faultyDb((sql) => /^\s*INSERT INTO webhook_breakers/.test(sql));

		const { result, ids } = await runBatch([{ body: outboxMessage(good) }, { body: outboxMessage(held) }], { ...env, DB: db });

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(result.retryMessages.map((m) => m.msgId)).toEqual([ids[1]]);
		expect(await received(healthy.key)).toHaveLength(1);
		expect(await received(probing.key)).toHaveLength(0);
		expect((await eventRow(good.eventid))?.delivered_at).toEqual(expect.any(String));
		expect((await eventRow(held.eventid))?.delivered_at).toBeNull();
		expect(errors.mock.calls.some(([line]) => String(line).includes("outbox delivery crashed"))).toBe(true);
	});
});
