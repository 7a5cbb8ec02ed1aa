import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FAILURE_THRESHOLD } from "../../src/outbox/breaker";
import { admin } from "../support/api";
import { attemptsOf, createOutboxApp, hookUrl, received, recordWebhook, runBatch, setAnswers, uniqueKey } from "./support";

async function deliverOnce(appid: string) {
	const event = await recordWebhook(appid);
	const run = await runBatch([{ body: { eventid: event.eventid } }]);
	return { event, run };
}

describe("webhook circuit breaker in the consumer", () => {
	it("opens after 5 failures, holds deliveries back without sending, shows it, and one probe closes it", async () => {
		const key = uniqueKey("breaker");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		await setAnswers(key, [], { status: 503, body: "down" });
		for (let i = 0; i < FAILURE_THRESHOLD; i++) await deliverOnce(app.appid);
		expect(await received(key)).toHaveLength(FAILURE_THRESHOLD);

		const view = await admin("GET", `/apps/${app.appid}/webhook-breaker`);
		expect(view.body).toMatchObject({ state: "open", consecutivefailures: FAILURE_THRESHOLD, lasterror: expect.stringContaining("503") });

		// Open: not attempted, retried later (after the cool-down), logged as not sent.
		const held = await deliverOnce(app.appid);
		expect(await received(key)).toHaveLength(FAILURE_THRESHOLD);
		expect(held.run.retries[0]!.delaySeconds).toBeGreaterThanOrEqual(50);
		const [attempt] = await attemptsOf(held.event.eventid);
		expect(attempt).toMatchObject({ outcome: "failed", response_code: null, error: expect.stringMatching(/^circuit open: not attempted/) });
		const log = await admin("GET", `/apps/${app.appid}/deliveries`);
		expect(log.body.webhookbreaker).toMatchObject({ state: "open" });

		// The cool-down ends (moved into the past): one probe goes; it succeeds and closes the breaker.
		await env.DB.prepare("UPDATE webhook_breakers SET open_until = ? WHERE appid = ?")
			.bind(Date.now() - 1, app.appid)
			.run();
		expect((await admin("GET", `/apps/${app.appid}/webhook-breaker`)).body.state).toBe("half_open");
		await setAnswers(key, [], { status: 200 });
		const probe = await deliverOnce(app.appid);
		expect(probe.run.result.explicitAcks).toHaveLength(1);
		expect(await received(key)).toHaveLength(FAILURE_THRESHOLD + 1);
		expect((await admin("GET", `/apps/${app.appid}/webhook-breaker`)).body).toMatchObject({ state: "closed", consecutivefailures: 0 });
	});

	it("another app's endpoint is unaffected, and the admin reset closes a breaker", async () => {
		const bad = uniqueKey("breaker-bad");
		const good = uniqueKey("breaker-good");
		const badApp = await createOutboxApp({ webhookurl: hookUrl(bad) });
		const goodApp = await createOutboxApp({ webhookurl: hookUrl(good) });
		await setAnswers(bad, [], { status: 500 });
		for (let i = 0; i < FAILURE_THRESHOLD; i++) await deliverOnce(badApp.appid);
		expect((await admin("GET", `/apps/${badApp.appid}/webhook-breaker`)).body.state).toBe("open");
		const ok = await deliverOnce(goodApp.appid);
		expect(ok.run.result.explicitAcks).toHaveLength(1);
		expect(await received(good)).toHaveLength(1);

		const reset = await admin("POST", `/apps/${badApp.appid}/webhook-breaker/reset`);
		expect(reset.body.state).toBe("closed");
	});
});
