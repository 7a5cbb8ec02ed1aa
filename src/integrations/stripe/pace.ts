import Stripe from "stripe";
import type { StripeConnection } from "./connection";

/**
 * Paces the payout requests of one Stripe account through its governor
 * (governor.ts) and reads what Stripe's errors say about trying again
 * (docs/stripe.md, "Stripe's rate limits"; issue 47).
 *
 * Stripe allows about 100 read and write requests a second per account in
 * live mode and 25 in test mode (https://docs.stripe.com/rate-limits). The
 * service shares that budget with the product's own calls to the same
 * account, so its defaults take half of it: RATE_DEFAULTS, or the deployment's
 * `STRIPE_RATE_LIVE` / `STRIPE_RATE_TEST` (requests a second).
 */
export const RATE_DEFAULTS = { live: 50, test: 12 } as const;

/** A request waits this long at most for its moment; a longer queue sends the work back to the Stripe queue for later. */
export const MAX_WAIT_MS = 20_000;

/** After a 429, the account's next request waits at least this long. */
const SLOW_DOWN_MS = 1_000;

interface RateSettings {
	STRIPE_RATE_LIVE?: string;
	STRIPE_RATE_TEST?: string;
}

export function rateOf(env: Env, livemode: boolean): number {
	const settings = env as Env & RateSettings;
	const configured = Number(livemode ? settings.STRIPE_RATE_LIVE : settings.STRIPE_RATE_TEST);
	return Number.isFinite(configured) && configured > 0 ? configured : livemode ? RATE_DEFAULTS.live : RATE_DEFAULTS.test;
}

const governorOf = (env: Env, connection: StripeConnection) =>
	env.STRIPE_GOVERNOR.get(env.STRIPE_GOVERNOR.idFromName(`${connection.livemode ? "live" : "test"}:${connection.account}`));

/** Waits for this account's next moment to send one request; `{ deferMs }` when the queue is longer than MAX_WAIT_MS. */
export async function paced(env: Env, connection: StripeConnection): Promise<{ go: true } | { deferMs: number }> {
	const slot = await governorOf(env, connection).reserve(rateOf(env, connection.livemode), MAX_WAIT_MS);
	if ("deferMs" in slot) return slot;
	if (slot.waitMs > 0) await new Promise((resolve) => setTimeout(resolve, slot.waitMs));
	return { go: true };
}

/** Tells the account's governor that Stripe answered 429. */
export async function rateLimited(env: Env, connection: StripeConnection): Promise<void> {
	await governorOf(env, connection).slowDown(SLOW_DOWN_MS);
}

/**
 * What an error of a Stripe call means for the request (Stripe's
 * `Stripe-Should-Retry` header first, as Stripe's own libraries read it):
 * `retry` under the same key (network, timeout, 409, 429, 5xx, or Stripe
 * saying so), `refused` for good (a 4xx, or Stripe saying a retry would not
 * help), `unknown` when Stripe says not to retry a 5xx (its result, maybe
 * applied, is kept under the key: only Stripe's record can tell).
 */
export function verdictOf(error: unknown): "retry" | "refused" | "unknown" {
	if (!(error instanceof Stripe.errors.StripeError) || error.statusCode === undefined) return "retry";
	const status = error.statusCode;
	const header = error.headers?.["stripe-should-retry"];
	if (header === "true") return "retry";
	if (header === "false") return status >= 500 ? "unknown" : "refused";
	return status === 409 || status === 429 || status >= 500 ? "retry" : status >= 400 ? "refused" : "retry";
}
