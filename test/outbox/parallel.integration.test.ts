import { describe, expect, it, vi } from "vitest";
import { attemptsOf, createOutboxApp, hookUrl, received, recordWebhook, runBatch, setAnswers, uniqueKey } from "./support";

// The platform lets an invocation have six connections waiting for headers (a seventh waits, its timeout
// running); wrangler dev and this pool do not enforce it, so the consumer must (src/outbox/parallel.ts).
describe("a batch's attempts and the platform's six outgoing connections", () => {
	it("runs at most 5 attempts at once, and another app's message does not wait behind a hanging app's", async () => {
		const hangKey = uniqueKey("parallel-hang");
		const okKey = uniqueKey("parallel-ok");
		const hanging = await createOutboxApp({ webhookurl: hookUrl(hangKey) });
		const healthy = await createOutboxApp({ webhookurl: hookUrl(okKey) });
		// Longer than the tests' 1,000 ms webhook timeout: every attempt to it times out.
		await setAnswers(hangKey, [], { delayMs: 5_000 });
		const stuck = [];
		for (let i = 0; i < 7; i++) stuck.push(await recordWebhook(hanging.appid));
		const other = await recordWebhook(healthy.appid);

		// The healthy app's message last in the batch, as the queue may hand it.
		await runBatch([...stuck, other].map((e) => ({ body: { eventid: e.eventid } })));

		const hung = (await received(hangKey)).map((r) => r.at).sort((a, b) => a - b);
		const [delivered] = await received(okKey);
		expect(hung).toHaveLength(7);
		// Two waves: five at once, then the sixth and seventh only once the first ones gave up (the 1,000 ms
		// timeout). The gaps are measured between waves, so a slow machine spreading a wave cannot fail them.
		expect(hung[5]! - hung[0]!).toBeGreaterThanOrEqual(800);
		expect(hung[5]! - hung[4]!).toBeGreaterThanOrEqual(400);
		// The other app's delivery took its turn second, in the first wave, not behind the hanging ones.
		expect(hung[5]! - delivered!.at).toBeGreaterThanOrEqual(400);
	});
});

describe("an attempt's own deadline", () => {
	it("ends the attempt at its timeout even when the fetch ignores its abort signal", async () => {
		const key = uniqueKey("deadline");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		const event = await recordWebhook(app.appid);
		const original = globalThis.fetch;
		// A fetch to the hook that never settles, whatever its signal says; anything else goes through.
		const spy = vi
			.spyOn(globalThis, "fetch")
			.mockImplementation((input, init) =>
				String(input instanceof Request ? input.url : input).startsWith(hookUrl(key))
					? new Promise<Response>(() => {})
					: original(input, init),
			);
		try {
			const { retries, ids } = await runBatch([{ body: { eventid: event.eventid } }]);
			expect(retries).toEqual([{ msgId: ids[0], delaySeconds: 5 }]);
		} finally {
			spy.mockRestore();
		}
		const [attempt] = await attemptsOf(event.eventid);
		expect(attempt).toMatchObject({ outcome: "failed", error: "timed out after 1000 ms" });
	});
});
