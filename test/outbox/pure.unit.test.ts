import { describe, expect, it } from "vitest";
import { deliveryStatus } from "../../src/outbox/deliveries";
import { webhookBody, webhookEnvelope } from "../../src/outbox/envelope";
import { escapeHtml, html, raw, safeHref } from "../../src/outbox/html";
import { isLastAttempt, MAX_ATTEMPTS, RETRY_DELAYS_SECONDS, retryDelaySeconds } from "../../src/outbox/retry";
import { signWebhook, webhookHeaders, webhookSecretBytes } from "../../src/outbox/signature";

describe("retry schedule", () => {
	it("grows 5 s, 5 min, 30 min, 2 h, 5 h, 10 h by attempt", () => {
		expect([1, 2, 3, 4, 5, 6].map(retryDelaySeconds)).toEqual([5, 300, 1800, 7200, 18000, 36000]);
	});

	it("holds the last delay past the schedule and clamps nonsense to the first", () => {
		expect(retryDelaySeconds(7)).toBe(36000);
		expect(retryDelaySeconds(99)).toBe(36000);
		expect(retryDelaySeconds(0)).toBe(5);
		expect(retryDelaySeconds(-3)).toBe(5);
	});

	it("never asks Queues for more than its 12 h maximum delay", () => {
		expect(Math.max(...RETRY_DELAYS_SECONDS)).toBeLessThanOrEqual(12 * 3600);
	});

	it("matches max_retries = 6 in wrangler.toml: the 7th attempt is the last", () => {
		expect(MAX_ATTEMPTS).toBe(7);
		expect(isLastAttempt(6)).toBe(false);
		expect(isLastAttempt(7)).toBe(true);
	});
});

describe("Standard Webhooks signature", () => {
	// The example of the Standard Webhooks specification's reference libraries.
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	const id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
	const timestamp = 1614265330;
	const body = '{"test": 2432232314}';

	it("matches the specification's reference value", async () => {
		expect(await signWebhook(secret, id, timestamp, body)).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	});

	it("decodes the secret without its whsec_ prefix", () => {
		expect(webhookSecretBytes(secret)).toEqual(webhookSecretBytes("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
		expect(webhookSecretBytes(secret).byteLength).toBe(24);
	});

	it("puts id, timestamp and signature in the headers", async () => {
		const headers = await webhookHeaders(secret, id, timestamp, body);
		expect(headers).toMatchObject({
			"content-type": "application/json",
			"webhook-id": id,
			"webhook-timestamp": "1614265330",
			"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		});
	});

	it("changes with any byte of the body", async () => {
		expect(await signWebhook(secret, id, timestamp, `${body} `)).not.toBe(await signWebhook(secret, id, timestamp, body));
	});
});

describe("envelope", () => {
	it("is {type, timestamp, livemode, data} with the event's own time and the app's mode", () => {
		expect(webhookEnvelope("reward.created", "2026-11-21T22:05:00.000Z", { a: 1 }, true)).toEqual({
			type: "reward.created",
			timestamp: "2026-11-21T22:05:00.000Z",
			livemode: true,
			data: { a: 1 },
		});
		expect(JSON.parse(webhookBody("user.registered", "2026-11-21T22:05:00Z", { userkey: "u1" }, false))).toEqual({
			type: "user.registered",
			timestamp: "2026-11-21T22:05:00.000Z",
			livemode: false,
			data: { userkey: "u1" },
		});
	});
});

describe("HTML helpers", () => {
	it("escapes the five special characters", () => {
		expect(escapeHtml(`<a href="x">Tom & Jerry's</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
	});

	it("escapes interpolations but not raw() markup", () => {
		expect(html`<p>Hi ${"<b>Ann</b>"}</p>${raw("<hr>")}`).toBe("<p>Hi &lt;b&gt;Ann&lt;/b&gt;</p><hr>");
		expect(html`<p>${null}${undefined}${3}</p>`).toBe("<p>3</p>");
	});

	it("only lets http(s) links through", () => {
		expect(safeHref("https://x.test/r/AB?x=1&y=2")).toBe("https://x.test/r/AB?x=1&amp;y=2");
		expect(safeHref("javascript:alert(1)")).toBe("#");
		expect(safeHref("not a url")).toBe("#");
	});
});

describe("delivery status", () => {
	const failed = (attempt: number, error = "HTTP 500") => ({ attempt, outcome: "failed" as const, error });
	it("reads the row and the latest attempt", () => {
		expect(deliveryStatus(null, null)).toBe("pending");
		expect(deliveryStatus("2026-11-21T00:00:00Z", { attempt: 1, outcome: "delivered", error: null })).toBe("delivered");
		expect(deliveryStatus("2026-11-21T00:00:00Z", { attempt: 1, outcome: "skipped", error: "no url" })).toBe("skipped");
		expect(deliveryStatus(null, failed(3))).toBe("retrying");
		expect(deliveryStatus(null, failed(7))).toBe("dead_lettered");
		expect(deliveryStatus(null, failed(1, "permanent: bad payload"))).toBe("failed");
	});
});
