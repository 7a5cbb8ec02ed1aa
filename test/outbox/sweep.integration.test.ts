import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { sweepOutbox } from "../../src/outbox/sweep";

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
