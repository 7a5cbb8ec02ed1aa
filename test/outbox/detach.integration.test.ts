import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { queue } from "../../src/outbox/consumer";
import { DETACH_AFTER_MS } from "../../src/outbox/detach";
import { MAX_ATTEMPTS } from "../../src/outbox/retry";
import { admin } from "../support/api";
import { attemptsOf, createOutboxApp, eventRow, hookUrl, received, recordWebhook, setAnswers, uniqueKey } from "./support";

// Detached attempts (src/outbox/detach.ts): a batch waits for its deliveries at most DETACH_AFTER_MS;
// a delivery still running then is settled as a delayed retry BEFORE the handler returns and goes on in the
// background with its whole timeout. The webhook timeout is 3 s here, so that a batch that waited for it (the
// code before detached attempts) is told apart from one that did not by far more than any load can blur.
const TIMEOUT_MS = 3_000;
const slowEnv = { ...env, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) };

afterEach(() => {
	vi.restoreAllMocks();
});

/**
 * Runs the consumer on one batch and tells what it had decided when the handler returned (how long that took,
 * which messages it had acked or retried, with the delays) apart from what the background did afterwards.
 */
async function runTimedBatch(messages: { eventid: string; attempts?: number }[]) {
	const batch = createMessageBatch(
		"referral-outbox",
		messages.map((m, i) => ({
			id: `h${i}-${crypto.randomUUID()}`,
			timestamp: new Date(),
			attempts: m.attempts ?? 1,
			body: { eventid: m.eventid },
		})),
	);
	const decided: { id: string; how: "ack" | "retry"; delaySeconds?: number }[] = [];
	for (const m of batch.messages) {
		vi.spyOn(m, "ack").mockImplementation(() => void decided.push({ id: m.id, how: "ack" }));
		vi.spyOn(m, "retry").mockImplementation((o) => void decided.push({ id: m.id, how: "retry", delaySeconds: o?.delaySeconds }));
	}
	const ctx = createExecutionContext();
	const started = Date.now();
	await queue(batch, slowEnv, ctx);
	const returnedAfterMs = Date.now() - started;
	const atReturn = [...decided];
	await getQueueResult(batch, ctx); // waits for the background (ctx.waitUntil)
	return { ids: batch.messages.map((m) => m.id), returnedAfterMs, atReturn, after: decided };
}

async function hookApp(name: string) {
	const key = uniqueKey(name);
	return { key, app: await createOutboxApp({ webhookurl: hookUrl(key) }) };
}

describe("a batch never waits for a slow endpoint beyond the detach budget", () => {
	it("returns at the budget with the hanging message retried and the healthy one acked; the background logs the timeout and tells the breaker", async () => {
		const hang = await hookApp("detach-hang");
		const ok = await hookApp("detach-ok");
		await setAnswers(hang.key, [], { delayMs: 10_000 });
		const stuck = await recordWebhook(hang.app.appid);
		const fine = await recordWebhook(ok.app.appid);

		const run = await runTimedBatch([{ eventid: stuck.eventid }, { eventid: fine.eventid }]);

		// Waiting for the hanging delivery would take the whole 3 s timeout.
		expect(run.returnedAfterMs).toBeGreaterThanOrEqual(DETACH_AFTER_MS - 50);
		expect(run.returnedAfterMs).toBeLessThan(TIMEOUT_MS - 1_000);
		// Both settled before the handler returned: the queue keeps the hanging one, whatever happens next.
		expect(run.atReturn).toEqual(
			expect.arrayContaining([
				{ id: run.ids[0], how: "retry", delaySeconds: 5 },
				{ id: run.ids[1], how: "ack" },
			]),
		);
		expect(run.atReturn).toHaveLength(2);
		// Nothing is settled again later.
		expect(run.after).toHaveLength(2);
		expect(await received(ok.key)).toHaveLength(1);
		expect(await received(hang.key)).toHaveLength(1);

		// The detached attempt went on with its whole timeout, was logged, and counted by the breaker.
		const [attempt] = await attemptsOf(stuck.eventid);
		expect(attempt).toMatchObject({ attempt: 1, outcome: "failed", error: `timed out after ${TIMEOUT_MS} ms` });
		expect(attempt!.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
		expect((await admin("GET", `/apps/${hang.app.appid}/webhook-breaker`)).body).toMatchObject({ consecutivefailures: 1 });
		expect((await eventRow(stuck.eventid))?.delivered_at).toBeNull();
	});

	it("a detached delivery that then succeeds is logged, and its message, back from the queue, is acked without sending again", async () => {
		const slow = await hookApp("detach-slow");
		await setAnswers(slow.key, [{ delayMs: DETACH_AFTER_MS + 700 }], {});
		const event = await recordWebhook(slow.app.appid);

		const first = await runTimedBatch([{ eventid: event.eventid }]);
		expect(first.returnedAfterMs).toBeLessThan(DETACH_AFTER_MS + 600);
		expect(first.atReturn).toEqual([{ id: first.ids[0], how: "retry", delaySeconds: 5 }]);
		expect(await attemptsOf(event.eventid)).toMatchObject([{ attempt: 1, outcome: "delivered", response_code: 200 }]);
		expect((await eventRow(event.eventid))?.delivered_at).not.toBeNull();

		// The retried message comes back (the queue counts it as attempt 2): delivered already, so acked, nothing sent.
		const again = await runTimedBatch([{ eventid: event.eventid, attempts: 2 }]);
		expect(again.atReturn).toEqual([{ id: again.ids[0], how: "ack" }]);
		expect(await received(slow.key)).toHaveLength(1);
		expect(await attemptsOf(event.eventid)).toHaveLength(1);
	});

	it("the message of a detached delivery that fails makes its next attempt when it comes back", async () => {
		const flaky = await hookApp("detach-flaky");
		// First: hangs past the timeout (detached, then failed). Then: answers at once.
		await setAnswers(flaky.key, [{ delayMs: 10_000 }], {});
		const event = await recordWebhook(flaky.app.appid);

		const first = await runTimedBatch([{ eventid: event.eventid }]);
		expect(first.returnedAfterMs).toBeLessThan(TIMEOUT_MS - 1_000);
		expect(first.atReturn).toEqual([{ id: first.ids[0], how: "retry", delaySeconds: 5 }]);
		const again = await runTimedBatch([{ eventid: event.eventid, attempts: 2 }]);
		expect(again.atReturn).toEqual([{ id: again.ids[0], how: "ack" }]);
		expect(await attemptsOf(event.eventid)).toMatchObject([
			{ attempt: 1, outcome: "failed" },
			{ attempt: 2, outcome: "delivered" },
		]);
		expect(await received(flaky.key)).toHaveLength(2);
	});

	it("messages still waiting for a connection are detached too, and a stalled app's are not attempted behind it", async () => {
		const hang = await hookApp("detach-wave");
		await setAnswers(hang.key, [], { delayMs: 10_000 });
		const events = [];
		for (let i = 0; i < 8; i++) events.push(await recordWebhook(hang.app.appid));

		const run = await runTimedBatch(events.map((e) => ({ eventid: e.eventid })));

		expect(run.returnedAfterMs).toBeLessThan(TIMEOUT_MS - 1_000);
		expect(run.atReturn).toHaveLength(8);
		expect(run.atReturn.every((d) => d.how === "retry" && d.delaySeconds === 5)).toBe(true);
		// Five at once (parallel.ts); after their timeout the other three are deferred, not attempted.
		expect(await received(hang.key)).toHaveLength(5);
		const logged = await Promise.all(events.map((e) => attemptsOf(e.eventid)));
		expect(logged.filter((rows) => rows.length === 1)).toHaveLength(5);
	});

	it("a message on its last attempt is waited for, not detached: its retry would dead-letter a delivery still under way", async () => {
		const slow = await hookApp("detach-last");
		await setAnswers(slow.key, [{ delayMs: DETACH_AFTER_MS + 700 }], {});
		const event = await recordWebhook(slow.app.appid);

		const run = await runTimedBatch([{ eventid: event.eventid, attempts: MAX_ATTEMPTS }]);

		expect(run.returnedAfterMs).toBeGreaterThanOrEqual(DETACH_AFTER_MS + 650);
		expect(run.atReturn).toEqual([{ id: run.ids[0], how: "ack" }]);
		expect(await attemptsOf(event.eventid)).toMatchObject([{ attempt: MAX_ATTEMPTS, outcome: "delivered" }]);
	});
});
