import { rateLimited } from "./rate-limits";

/**
 * Failed admin sign-ins, limited per client IP with the Workers Rate Limiting
 * binding `ADMIN_AUTH_LIMITER` (wrangler.toml: 10 per 10 s), like the public
 * API's failed authentications (rate-limits.ts). A wrong bearer token on
 * /admin/v1 and a wrong token on the dashboard's sign-in form count together;
 * the 11th within the window answers 429 with Retry-After.
 *
 * The binding can only count (no "is this key over?" without counting), so
 * each isolate also remembers the addresses it saw go over the limit until
 * their window ends, and refuses them before the token is compared: without
 * that, a right guess would still answer 200 among the 429s, and the 429s
 * would only tell the guesser "wrong" a little faster. A correct token from
 * an address that never went over is never counted or refused, so a guesser
 * elsewhere cannot lock the operator out.
 *
 * Calls without a client IP (the dashboard's in-process admin calls, tests)
 * are not limited: Cloudflare and `wrangler dev` always send one.
 */

export interface AdminLimiters {
	ADMIN_AUTH_LIMITER?: RateLimit;
}

/** The limiter's window (wrangler.toml `period`), and Retry-After. */
const WINDOW_MS = 10_000;
/** Addresses over the limit, per isolate: until when they are refused (epoch ms). Bounded, oldest first out. */
const overLimit = new Map<string, number>();
const MAX_REMEMBERED = 10_000;

const adminKey = (ip: string) => `admin:${ip.slice(0, 64)}`;
const tooMany = () => rateLimited("Too many failed admin sign-ins from this address; try again later.");

/** Throws 429 while this isolate knows `ip` to be over its limit; call it before comparing the token. */
export function refuseThrottledAdmin(ip: string, now = Date.now()): void {
	const until = overLimit.get(ip);
	if (until === undefined) return;
	if (until > now) throw tooMany();
	overLimit.delete(ip);
}

/** Counts one failed admin sign-in of `ip`; throws 429 `rate_limited` once it is over the limit. */
export async function countAdminFailure(env: AdminLimiters, ip: string, now = Date.now()): Promise<void> {
	if (ip === "unknown" || !env.ADMIN_AUTH_LIMITER) return;
	let allowed = true;
	try {
		allowed = (await env.ADMIN_AUTH_LIMITER.limit({ key: adminKey(ip) })).success;
	} catch (err) {
		// As the public API's limits: a failing limiter lets the request through rather than take the admin down.
		console.error(JSON.stringify({ msg: "admin rate limiter failed; request let through", error: String(err) }));
	}
	if (allowed) return;
	overLimit.delete(ip);
	if (overLimit.size >= MAX_REMEMBERED) overLimit.delete(overLimit.keys().next().value!);
	overLimit.set(ip, now + WINDOW_MS);
	throw tooMany();
}
