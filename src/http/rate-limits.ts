import { ApiError } from "./errors";

/**
 * Rate limits of the public API, with the Workers Rate Limiting binding
 * (`[[ratelimits]]` in wrangler.toml; the limits and periods are set there):
 *
 * - `FAILED_AUTH_LIMITER`: failed authentications per (apikey, client IP);
 *   beyond it a wrong key gets 429 instead of 401.
 * - `FAILED_AUTH_IP_LIMITER`: failed authentications per client IP whatever
 *   the apikey, so a client cannot escape the first limit by trying a new
 *   apikey each time. Only when the client IP is known (Cloudflare always
 *   sends it; local calls without it share no address).
 * - `APP_RATE_LIMITER`: authenticated requests per app, so one tenant's flood
 *   cannot take the service from the others.
 *
 * Windows are fixed (10 s or 60 s). A limiter that is missing or fails lets
 * the request through: the limits protect the service, they must not take it
 * down.
 */

export interface Limiters {
	FAILED_AUTH_LIMITER?: RateLimit;
	FAILED_AUTH_IP_LIMITER?: RateLimit;
	APP_RATE_LIMITER?: RateLimit;
}

/** Seconds a client told 429 should wait: the window of both limiters in wrangler.toml. */
export const RETRY_AFTER_SECONDS = 10;
/** Keys longer than this are cut: a limiter key need not carry a 60 KB apikey. */
const MAX_KEY_PART = 200;

/** The client's address as Cloudflare reports it; `unknown` when there is none (tests, local calls). */
export function clientIp(request: Request): string {
	return request.headers.get("cf-connecting-ip")?.trim() || "unknown";
}

/** The limiter key of failed authentications: the API key as sent and the client IP. */
export const failedAuthKey = (apikey: string, ip: string) => `auth:${apikey.slice(0, MAX_KEY_PART)}|${ip.slice(0, 64)}`;
export const failedAuthIpKey = (ip: string) => `authip:${ip.slice(0, 64)}`;
export const appKey = (appid: string) => `app:${appid}`;

export const rateLimited = (message: string) =>
	new ApiError(429, "rate_limited", message, { retryafter: RETRY_AFTER_SECONDS }, { "Retry-After": String(RETRY_AFTER_SECONDS) });

/** True when the request may go on (under the limit, or no working limiter). */
async function allowed(limiter: RateLimit | undefined, key: string): Promise<boolean> {
	if (!limiter) return true;
	try {
		return (await limiter.limit({ key })).success;
	} catch (err) {
		console.error(JSON.stringify({ msg: "rate limiter failed; request let through", error: String(err) }));
		return true;
	}
}

/** Counts one failed authentication; throws 429 `rate_limited` once the (apikey, IP) pair or the IP is over its limit. */
export async function countFailedAuth(env: Limiters, apikey: string, ip: string): Promise<void> {
	const [perKey, perIp] = await Promise.all([
		allowed(env.FAILED_AUTH_LIMITER, failedAuthKey(apikey, ip)),
		ip === "unknown" ? true : allowed(env.FAILED_AUTH_IP_LIMITER, failedAuthIpKey(ip)),
	]);
	if (!perKey) throw rateLimited("Too many failed authentications for this apikey from this address; try again later.");
	if (!perIp) throw rateLimited("Too many failed authentications from this address; try again later.");
}

/** Counts one request of the app; throws 429 `rate_limited` when the app is over its limit. */
export async function limitApp(env: Limiters, appid: string): Promise<void> {
	if (!(await allowed(env.APP_RATE_LIMITER, appKey(appid)))) {
		throw rateLimited("This app sent too many requests; try again later.");
	}
}
