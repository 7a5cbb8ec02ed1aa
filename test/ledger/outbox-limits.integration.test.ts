import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { flushOutboxOnce, queueWebhook } from "../../src/ledger/outbox";
import { webhookEvent } from "../../src/outbox/events";
import { recordingQueue, waitForReceived } from "../outbox/support";
import { freshLedger, grantOf, hookedAppId } from "./support";

/**
 * Issue 20 item 3: a flush once sent up to 100 queued events, each carrying
 * its payload, in ONE sendBatch; Cloudflare Queues refuse a batch over 256 KB
 * (and a message over 128 KB), so 100 large events failed on every later
 * flush and never left the ledger.
 */

const outboxCount = (stub: ReturnType<typeof freshLedger>["stub"]) =>
	runInDurableObject(stub, (_l, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n);

describe("UserLedger outbox within the Queues limits", () => {
	it("150 large events (20 KB each, three of 150 KB) all leave the ledger and reach the receiver once each", async () => {
		const appid = await hookedAppId();
		const { userkey, stub } = freshLedger(appid);
		// A real write first, so the ledger exists and is migrated as in production.
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		const large = "x".repeat(20_000);
		// 50,000 characters but 150,000 bytes of UTF-8: over a message's 128 KB, so it must travel by reference.
		const huge = "€".repeat(50_000);
		const ids = await runInDurableObject(stub, (_l, state) => {
			const queued: string[] = [];
			for (let i = 0; i < 150; i++) {
				const event = webhookEvent(appid, "reward.redeemed", { userkey, i, note: i % 50 === 7 ? huge : large });
				queueWebhook(state.storage.sql, event, Date.now());
				queued.push(event.eventid);
			}
			return queued;
		});

		await stub.flush();
		expect(await outboxCount(stub)).toBe(0);
		const recorded = await env.DB.prepare(
			"SELECT COUNT(*) AS n FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?)) AND enqueued_at IS NOT NULL",
		)
			.bind(JSON.stringify(ids))
			.first<{ n: number }>();
		expect(recorded?.n).toBe(150);

		// Through the real queue and consumer: every event arrives, the 150 KB ones read from D1 by id.
		const got = await waitForReceived(appid, 151, 60_000);
		const byId = new Map(got.map((r) => [r.headers["webhook-id"], r]));
		for (const id of ids) expect(byId.has(id), id).toBe(true);
		expect(got.length).toBe(byId.size);
		const hugeOne = byId.get(ids[7]!);
		expect(JSON.parse(hugeOne!.body)).toMatchObject({ type: "reward.redeemed", data: { i: 7, note: huge } });
	}, 90_000);

	it("a refused sendBatch holds back only its own entries: the others leave, and the rest go on the next pass", async () => {
		const appid = await hookedAppId();
		const { userkey, stub } = freshLedger(appid);
		await stub.grant(appid, userkey, [grantOf()]);
		await stub.flush();
		const recording = recordingQueue();
		let calls = 0;
		// The second sendBatch of the pass is refused (a transient error of the queue); the others are taken.
		const flakyQueue: Queue = {
			...recording.runEnv.OUTBOX,
			sendBatch: (messages, options) =>
				++calls === 2 ? Promise.reject(new Error("queue busy")) : recording.runEnv.OUTBOX.sendBatch(messages, options),
		};
		const left = await runInDurableObject(stub, async (_l, state) => {
			const sql = state.storage.sql;
			for (let i = 0; i < 30; i++) queueWebhook(sql, webhookEvent(appid, "reward.redeemed", { userkey, i, note: "x".repeat(20_000) }), 0);
			const host = {
				sql,
				transactionSync: <T>(fn: () => T) => state.storage.transactionSync(fn),
				env: { ...env, OUTBOX: flakyQueue },
				appid,
				userkey,
				assignCoupon: () => undefined,
			};
			await flushOutboxOnce(host);
			const waiting = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox WHERE attempts = 1").one().n;
			const total = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n;
			// Due again at once, as the backoff would make them later.
			sql.exec("UPDATE outbox SET next_attempt_at = 0");
			await flushOutboxOnce(host);
			return { waiting, total, after: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n };
		});
		// 30 messages of 20 KB: three sendBatch calls of at most 224 KB; the second one's entries waited, alone.
		expect(calls).toBeGreaterThanOrEqual(4);
		expect(left.waiting).toBe(left.total);
		expect(left.total).toBeGreaterThan(0);
		expect(left.total).toBeLessThan(30);
		expect(left.after).toBe(0);
		expect(new Set(recording.sent).size).toBe(30);
	});
});
