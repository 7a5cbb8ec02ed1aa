import Stripe from "stripe";
import { findStripeConfig } from "../../db/stripe";
import { open } from "../../domain/secret-box";

/**
 * An app's Stripe connection (docs/stripe.md): its keys opened from their
 * sealed form (domain/secret-box.ts) and a client of the official `stripe`
 * package on the Workers fetch client, pointed at the app's `apiurl` when it
 * has one (tests and Stripe-compatible proxies).
 */
export interface StripeConnection {
	stripe: Stripe;
	webhookSecret: string;
	eventname: string;
	/** False for a test key (sk_test_/rk_test_): its events say livemode false, and its payouts move no real money. */
	livemode: boolean;
	/** Names the Stripe account for its rate governor (pace.ts): a digest of the secret key, the same for apps sharing one. */
	account: string;
}

/** A client for `secretKey`: no retries of its own, so a failure goes back to the queue, which retries under the same key. */
export function stripeClient(secretKey: string, apiurl: string | null, timeoutMs = 10_000): Stripe {
	const url = apiurl ? new URL(apiurl) : null;
	const protocol = url?.protocol === "http:" ? "http" : "https";
	return new Stripe(secretKey, {
		httpClient: Stripe.createFetchHttpClient(),
		maxNetworkRetries: 0,
		timeout: timeoutMs,
		...(url ? { host: url.hostname, port: url.port || (protocol === "http" ? "80" : "443"), protocol } : {}),
	});
}

/** How long a call to Stripe may take before the client gives up: 10 s, shorter in tests (STRIPE_TIMEOUT_MS). */
function timeoutOf(env: Env): number {
	const configured = Number((env as Env & { STRIPE_TIMEOUT_MS?: string }).STRIPE_TIMEOUT_MS);
	return Number.isFinite(configured) && configured > 0 ? configured : 10_000;
}

export async function stripeConnection(env: Env, appid: string): Promise<StripeConnection | null> {
	const row = await findStripeConfig(env.DB, appid);
	if (!row) return null;
	const [secretKey, webhookSecret] = await Promise.all([
		open(env.SECRETS_KEY, `stripe-secretkey:${appid}`, row.secretkey_box),
		open(env.SECRETS_KEY, `stripe-webhooksecret:${appid}`, row.webhooksecret_box),
	]);
	return {
		stripe: stripeClient(secretKey, row.apiurl, timeoutOf(env)),
		webhookSecret,
		eventname: row.eventname,
		livemode: !/^(sk|rk)_test_/.test(secretKey),
		account: await accountOf(secretKey),
	};
}

/** A digest of the secret key (never the key itself): one name per Stripe account the service calls with it. */
async function accountOf(secretKey: string): Promise<string> {
	const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`stripe-account:${secretKey}`)));
	return [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The address to paste into Stripe's dashboard as the webhook endpoint. */
export const stripeWebhookUrl = (origin: string, appid: string) => `${origin}/integrations/stripe/${encodeURIComponent(appid)}`;

/**
 * True for an answer of Stripe that a retry would not change (a 4xx other
 * than 409 "idempotent request in progress" and 429 "rate limited"); false
 * for network errors and 5xx, which the queue retries.
 */
export function refusedByStripe(error: unknown): error is Stripe.errors.StripeError {
	if (!(error instanceof Stripe.errors.StripeError)) return false;
	const status = error.statusCode ?? 0;
	return status >= 400 && status < 500 && status !== 409 && status !== 429;
}
