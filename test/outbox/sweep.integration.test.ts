import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { sweepOutbox } from "../../src/outbox/sweep";
import { createOutboxApp, hookUrl, recordingQueue, recordWebhook, uniqueKey, waitForReceived } from "./support";

/** Records `n` webhook events of a fresh app as stuck: never enqueued, five minutes old. */
async function stuckEvents(n: number) {
	const appid = `app_sweep${crypto.randomUUID().slice(0, 8)}`;
	const old = new Date(Date.now() - 5 * 60_000).toISOString();
	const ids = Array.from({ length: n }, (_, i) => `msg_stuck_${appid}_${i}`);
	await env.DB.batch(
		ids.map((id) =>
			env.DB.prepare(
				"INSERT INTO outbox_events (eventid, appid, kind, type, payload, created_at) VALUES (?, ?, 'webhook', 'reward.created', '{}', ?)",
			).bind(id, appid, old),
		),
	);
	return { appid, ids };
}

const unsent = async (appid: string) =>
	(
		await env.DB.prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE appid = ? AND enqueued_at IS NULL")
			.bind(appid)
			.first<{ n: number }>()
	)?.n;

describe("outbox sweep", () => {
	it("sweeps 150 stuck events in one pass without error (IN lists stay under D1's 100 parameters)", async () => {
		const { appid } = await stuckEvents(150);
		expect(await sweepOutbox(env)).toBeGreaterThanOrEqual(150);
		expect(await unsent(appid)).toBe(0);
	});

	it("runs from the scheduled handler that src/index.ts exports", async () => {
		const { appid } = await stuckEvents(3);
		const ctx = createExecutionContext();
		await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
		await waitOnExecutionContext(ctx);
		expect(await unsent(appid)).toBe(0);
	});
});

/** Marks an event as handed to the queue `minutesAgo` minutes ago, as a producer that sent it would have. */
const enqueuedAgo = (eventid: string, minutesAgo: number) =>
	env.DB.prepare("UPDATE outbox_events SET enqueued_at = ? WHERE eventid = ?")
		.bind(new Date(Date.now() - minutesAgo * 60_000).toISOString(), eventid)
		.run();

describe("outbox sweep: events enqueued but never attempted (issue 20 item 5)", () => {
	it("re-sends an event whose queue message was lost, with the same webhook-id, and it is delivered once", async () => {
		const key = uniqueKey("lost-message");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		const event = await recordWebhook(app.appid);
		// The producer sent it (marked enqueued, as a ledger flush records its events) and the message was lost in a restart.
		await enqueuedAgo(event.eventid, 3);

		expect(await sweepOutbox(env)).toBeGreaterThanOrEqual(1);
		const [delivery] = await waitForReceived(key, 1, 20_000);
		expect(delivery!.headers["webhook-id"]).toBe(event.eventid);
		const row = await env.DB.prepare("SELECT delivered_at, attempted_at FROM outbox_events WHERE eventid = ?")
			.bind(event.eventid)
			.first<{ delivered_at: string | null; attempted_at: string | null }>();
		expect(row).toEqual({ delivered_at: expect.any(String), attempted_at: expect.any(String) });
	});

	it("sends it again once per window, never an event attempted or delivered, nor one enqueued a moment ago", async () => {
		const app = await createOutboxApp();
		const lost = await recordWebhook(app.appid);
		const fresh = await recordWebhook(app.appid);
		const attempted = await recordWebhook(app.appid);
		const delivered = await recordWebhook(app.appid);
		await enqueuedAgo(lost.eventid, 3);
		await enqueuedAgo(fresh.eventid, 0.5);
		for (const e of [attempted, delivered]) await enqueuedAgo(e.eventid, 3);
		await env.DB.prepare("UPDATE outbox_events SET attempted_at = ? WHERE eventid = ?")
			.bind(new Date().toISOString(), attempted.eventid)
			.run();
		await env.DB.prepare("UPDATE outbox_events SET delivered_at = ?, attempted_at = ? WHERE eventid = ?")
			.bind(new Date().toISOString(), new Date().toISOString(), delivered.eventid)
			.run();
		const mine = (sent: string[]) => sent.filter((id) => [lost, fresh, attempted, delivered].some((e) => e.eventid === id));

		const first = recordingQueue();
		await sweepOutbox(first.runEnv);
		expect(mine(first.sent)).toEqual([lost.eventid]);
		// A second sweep at once (the consumer's and the cron's overlap) finds it claimed: nothing twice.
		const second = recordingQueue();
		await sweepOutbox(second.runEnv);
		expect(mine(second.sent)).toEqual([]);
		// Still unattempted a window later (that message was lost too): sent again, with the one that was fresh.
		const later = recordingQueue();
		await sweepOutbox(later.runEnv, { now: Date.now() + 3 * 60_000 });
		expect(mine(later.sent).sort()).toEqual([lost.eventid, fresh.eventid].sort());
	});
});
