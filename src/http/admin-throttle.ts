import { rateLimited } from "./rate-limits";

/**
 * Failed credential checks (admin tokens, members' passwords, invitation and
 * reset forms), limited with the Workers Rate Limiting binding
 * `ADMIN_AUTH_LIMITER` (wrangler.toml: 10 per 10 s) under two keys: the
 * client's address, and the target person when the check names one (the
 * email of a sign-in, the person of an invitation). A guesser spreading over
 * many addresses is still held to 10 guesses a window at one person; one
 * address is held to 10 whatever it targets. The 11th failure answers 429
 * with Retry-After.
 *
 * The binding can only count (no "is this key over?" without counting), so
 * each isolate also remembers the addresses and targets it saw go over the
 * limit until their window ends, and refuses them before the credential is
 * compared: without that, a right guess would still answer 200 among the
 * 429s, and the 429s would only tell the guesser "wrong" a little faster.
 *
 * A stale credential retried (a revoked token in a script's loop, a password
 * typed wrong twice the same way) counts once per window: the isolate
 * remembers a keyed digest of each failed (address, target, credential) for
 * the window, and a repeat is answered "wrong" without counting. So a
 * script's stale token never locks out the operator's valid credentials
 * from the same address, while distinct guesses are refused after 10. (Per
 * isolate: a repeat landing on another isolate counts once there too.)
 *
 * Calls without a client IP (the dashboard's in-process admin calls, tests)
 * are not limited by address: Cloudflare and `wrangler dev` always send one.
 *
 * Password-reset requests are not failed checks and never count here: they
 * name a person without proving anything, so counting them under the person
 * let anyone lock a member out of signing in with the right password
 * (issue 47). They have their own key per address (`allowResetRequest`) and
 * a cap of emails per person (src/dashboard/reset.tsx).
 */

export interface AdminLimiters {
	ADMIN_AUTH_LIMITER?: RateLimit;
}

/** A failed check: from where, against whom (an email, lower case), with what (the credential as presented). */
export interface FailedCheck {
	ip: string;
	target?: string;
	credential?: string;
}

/** The limiter's window (wrangler.toml `period`), and Retry-After. */
const WINDOW_MS = 10_000;
/** Keys over the limit, per isolate: until when they are refused (epoch ms). Bounded, oldest first out. */
const overLimit = new Map<string, number>();
/** Digests of failed (address, target, credential) seen this window: until when a repeat is not counted again. */
const seenFailures = new Map<string, number>();
const MAX_REMEMBERED = 10_000;

const ipKey = (ip: string) => `admin:${ip.slice(0, 64)}`;
/** Reset requests per address: a key of its own in the same limiter, so they never touch the sign-in keys above. */
const resetIpKey = (ip: string) => `admin-reset:${ip.slice(0, 64)}`;
const targetKey = (target: string) => `admin-target:${target.slice(0, 254)}`;
const tooMany = () => rateLimited("Too many failed sign-ins; try again later.");

/**
 * A per-isolate random key, so the digests of wrong passwords kept for a window are not plain hashes of them. Made on
 * first use: workerd refuses random values in global scope, and `wrangler dev` did not start with it made there.
 */
let digestKeyBytes: Uint8Array | undefined;

async function failureDigest(check: FailedCheck): Promise<string> {
	digestKeyBytes ??= crypto.getRandomValues(new Uint8Array(32));
	const digestKey = digestKeyBytes;
	const text = new TextEncoder().encode(`${check.ip}\n${check.target ?? ""}\n${check.credential ?? ""}`);
	const bytes = new Uint8Array(digestKey.length + text.length);
	bytes.set(digestKey);
	bytes.set(text, digestKey.length);
	return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))));
}

function remember(map: Map<string, number>, key: string, until: number): void {
	map.delete(key);
	if (map.size >= MAX_REMEMBERED) map.delete(map.keys().next().value!);
	map.set(key, until);
}

function live(map: Map<string, number>, key: string, now: number): boolean {
	const until = map.get(key);
	if (until === undefined) return false;
	if (until > now) return true;
	map.delete(key);
	return false;
}

/** Throws 429 while this isolate knows `ip` or `target` to be over its limit; call it before comparing the credential. */
export function refuseThrottledAdmin(ip: string, target?: string, now = Date.now()): void {
	if (live(overLimit, ipKey(ip), now)) throw tooMany();
	if (target && live(overLimit, targetKey(target), now)) throw tooMany();
}

async function allowed(env: AdminLimiters, key: string): Promise<boolean> {
	try {
		return (await env.ADMIN_AUTH_LIMITER!.limit({ key })).success;
	} catch (err) {
		// As the public API's limits: a failing limiter lets the request through rather than take the admin down.
		console.error(JSON.stringify({ msg: "admin rate limiter failed; request let through", error: String(err) }));
		return true;
	}
}

/**
 * Counts one failed check under its address and its target; throws 429
 * `rate_limited` once either is over the limit. A repeat of a failure
 * already counted this window is not counted again.
 */
export async function countAdminFailure(env: AdminLimiters, check: FailedCheck, now = Date.now()): Promise<void> {
	if (!env.ADMIN_AUTH_LIMITER) return;
	const digest = await failureDigest(check);
	if (live(seenFailures, digest, now)) return;
	remember(seenFailures, digest, now + WINDOW_MS);
	const keys = [...(check.ip === "unknown" ? [] : [ipKey(check.ip)]), ...(check.target ? [targetKey(check.target)] : [])];
	let over = false;
	for (const key of keys) {
		if (await allowed(env, key)) continue;
		remember(overLimit, key, now + WINDOW_MS);
		over = true;
	}
	if (over) throw tooMany();
}

/**
 * Counts one password-reset request from `ip` under its own key (10 per 10 s,
 * the limiter's): false once the address is over it. A flood of the form from
 * one address is answered 429; sign-ins from that address and of the person
 * named are not affected.
 */
export async function allowResetRequest(env: AdminLimiters, ip: string): Promise<boolean> {
	if (!env.ADMIN_AUTH_LIMITER || ip === "unknown") return true;
	return allowed(env, resetIpKey(ip));
}
