import { type App, findAppByApiKey } from "../db/apps";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";
import { forgetDeliveryApp } from "../outbox/app-settings";
import { ApiError } from "./errors";

/**
 * Per-isolate cache of apps by API key, so an authenticated call costs no D1
 * round trip when the isolate is warm. The private key is still checked on
 * every call. A rotated key is seen by other isolates within CACHE_TTL_MS.
 *
 * Unknown keys are cached too (as null), so an unknown key and a known one
 * cost the same: one D1 read the first time, none while cached. Otherwise a
 * warm known key answers measurably faster than an unknown one, which tells
 * an attacker which API keys exist.
 */
const CACHE_TTL_MS = 30_000;
/** At most this many keys are cached; the oldest entry goes first (a flood of random keys cannot grow memory). */
const CACHE_MAX_ENTRIES = 10_000;
/** Longer API keys are never looked up (ours are far shorter); they take the same steps with no app. */
const MAX_APIKEY_LENGTH = 200;
const cache = new Map<string, { app: App | null; expires: number }>();

/** Forgets cached apps (after a key rotation or an app update in this isolate). */
export function forgetCachedApp(appid: string): void {
	for (const [key, entry] of cache) if (entry.app?.appid === appid) cache.delete(key);
	forgetDeliveryApp(appid);
}

/** Forgets a cached miss, after an app with that key was created in this isolate. */
export function forgetCachedKey(apikey: string): void {
	cache.delete(apikey);
}

/** Lookups in flight by API key: concurrent calls on a cold or expired entry share one D1 read. */
const pending = new Map<string, Promise<App | null>>();

async function lookupApp(db: D1Database, apikey: string): Promise<App | null> {
	const hit = cache.get(apikey);
	if (hit && hit.expires > Date.now()) return hit.app;
	const inFlight = pending.get(apikey);
	if (inFlight) return inFlight;
	// Misses are cached too (and evicted oldest first), so an unknown key costs what a known one does (no timing oracle).
	const lookup = (apikey.length <= MAX_APIKEY_LENGTH ? findAppByApiKey(db, apikey) : Promise.resolve(null))
		.then((app) => {
			cache.delete(apikey);
			if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
			cache.set(apikey, { app, expires: Date.now() + CACHE_TTL_MS });
			return app;
		})
		.finally(() => pending.delete(apikey));
	pending.set(apikey, lookup);
	return lookup;
}

/** The steps of a credential check, injectable so a unit test can see that every path runs the same ones. */
export interface AuthSteps {
	lookup(apikey: string): Promise<App | null>;
	hash(text: string): Promise<string>;
	equal(a: string, b: string): boolean;
}

/**
 * What an unknown key is compared against: a SHA-256 hex digest like a real
 * one (same length, so the constant-time compare does the same work), that no
 * private key hashes to in practice.
 */
export const DUMMY_HASH = "d".repeat(64);

/**
 * Checks `apikey` + `privatekey`: the same steps whether the key is unknown
 * or the private key is wrong (lookup, hash, constant-time compare against
 * the app's hash or the dummy), so timing does not reveal which API keys
 * exist. Returns the app, or null for wrong credentials.
 */
export async function verifyCredentials(steps: AuthSteps, apikey: string, privatekey: string): Promise<App | null> {
	const app = await steps.lookup(apikey);
	const presented = await steps.hash(privatekey);
	const matches = steps.equal(presented, app?.privatekeyHash ?? DUMMY_HASH);
	return matches && app ? app : null;
}

export const liveSteps = (db: D1Database): AuthSteps => ({
	lookup: (apikey) => lookupApp(db, apikey),
	hash: sha256Hex,
	equal: constantTimeEqual,
});

/** The credentials of a body, or a 401 `missing_credentials` when they are not both non-empty strings. */
export function credentialsOf(body: Record<string, unknown>): { apikey: string; privatekey: string } {
	const { apikey, privatekey } = body;
	if (typeof apikey !== "string" || typeof privatekey !== "string" || apikey === "" || privatekey === "") {
		throw new ApiError(401, "missing_credentials", "apikey and privatekey are required strings.");
	}
	return { apikey, privatekey };
}

/**
 * Authenticates `apikey` + `privatekey` from a request body. Missing or wrong
 * credentials are a 401 whose message does not say which part was wrong.
 * `onFailure` runs for wrong credentials before the 401 (the failed-auth
 * rate limit; it may throw a 429 instead).
 */
export async function authenticate(
	db: D1Database,
	body: Record<string, unknown>,
	onFailure: (apikey: string) => Promise<void> = async () => {},
): Promise<App> {
	const { apikey, privatekey } = credentialsOf(body);
	const app = await verifyCredentials(liveSteps(db), apikey, privatekey);
	if (!app) {
		await onFailure(apikey);
		throw new ApiError(401, "invalid_credentials", "Invalid apikey or privatekey.");
	}
	return app;
}
