import { env } from "cloudflare:workers";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { RATE_DEFAULTS, rateOf, verdictOf } from "../../src/integrations/stripe/pace";

/**
 * The Stripe account's governor (issue 47): a real Durable Object handing
 * out evenly spaced moments, a queue too long to wait for answered as a
 * deferral, a 429 pushing every later moment back; and what Stripe's errors
 * say about trying again, its `Stripe-Should-Retry` header first.
 */

const governor = () => env.STRIPE_GOVERNOR.get(env.STRIPE_GOVERNOR.idFromName(`test:${crypto.randomUUID()}`));

const stripeError = (statusCode: number, headers: Record<string, string> = {}, type = "invalid_request_error") =>
	Stripe.errors.StripeError.generate({ type, message: "x", statusCode, headers } as Parameters<
		typeof Stripe.errors.StripeError.generate
	>[0]);

describe("the Stripe account's governor", () => {
	it("spaces the moments it hands out at its rate, and defers what would wait too long", async () => {
		const stub = governor();
		const slots = [];
		for (let i = 0; i < 5; i++) slots.push(await stub.reserve(10, 1_000));
		const waits = slots.map((s) => ("waitMs" in s ? s.waitMs : -1));
		expect(waits[0]).toBe(0);
		// 10 a second: each moment 100 ms after the one before (less the time the calls took).
		for (let i = 1; i < 5; i++) expect(waits[i]).toBeGreaterThan(i * 100 - 60);
		for (let i = 1; i < 5; i++) expect(waits[i]).toBeLessThanOrEqual(i * 100);
		// A queue longer than the caller waits: nothing reserved, told how long it is.
		const far = governor();
		for (let i = 0; i < 11; i++) await far.reserve(10, 1_000);
		const deferred = await far.reserve(10, 1_000);
		expect(deferred).toMatchObject({ deferMs: expect.any(Number) });
		expect("deferMs" in deferred && deferred.deferMs).toBeGreaterThan(1_000);
	});

	it("after a 429 lets nothing leave for a second", async () => {
		const stub = governor();
		await stub.slowDown(1_000);
		const slot = await stub.reserve(100, 5_000);
		expect("waitMs" in slot && slot.waitMs).toBeGreaterThan(900);
	});
});

describe("what a Stripe error says about trying again", () => {
	it("reads Stripe-Should-Retry before the status", () => {
		expect(verdictOf(stripeError(400, { "stripe-should-retry": "true" }))).toBe("retry");
		expect(verdictOf(stripeError(500, { "stripe-should-retry": "false" }, "api_error"))).toBe("unknown");
		expect(verdictOf(stripeError(409, { "stripe-should-retry": "false" }))).toBe("refused");
		// Without the header: by status, as before.
		expect(verdictOf(stripeError(429))).toBe("retry");
		expect(verdictOf(stripeError(409))).toBe("retry");
		expect(verdictOf(stripeError(503, {}, "api_error"))).toBe("retry");
		expect(verdictOf(stripeError(402))).toBe("refused");
		expect(verdictOf(new Error("network"))).toBe("retry");
	});

	it("takes half of Stripe's published rates by default, test and live apart", () => {
		expect(rateOf(env, true)).toBe(RATE_DEFAULTS.live);
		expect(rateOf(env, false)).toBe(RATE_DEFAULTS.test);
		expect(RATE_DEFAULTS.live).toBeLessThan(100);
		expect(RATE_DEFAULTS.test).toBeLessThan(25);
		expect(rateOf({ ...env, STRIPE_RATE_TEST: "3" } as Env, false)).toBe(3);
	});
});
