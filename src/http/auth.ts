import { type App, findAppByApiKey } from "../db/apps";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";
import { forgetDeliveryApp } from "../outbox/app-settings";
import { ApiError } from "./errors";

/**
 * Per-isolate cache of apps by API key, so an authenticated call costs no D1
 * round trip when the isolate is warm. The private key is still checked on
 * every call. A rotated key is seen by other isolates within CACHE_TTL_MS.
 */
const CACHE_TTL_MS = 30_000;
const cache = new Map<string, { app: App; expires: number }>();

/** Forgets cached apps (after a key rotation or an app update in this isolate). */
export function forgetCachedApp(appid: string): void {
	for (const [key, entry] of cache) if (entry.app.appid === appid) cache.delete(key);
	forgetDeliveryApp(appid);
}

/** Lookups in flight by API key: concurrent calls on a cold or expired entry share one D1 read. */
const pending = new Map<string, Promise<App | null>>();

async function lookupApp(db: D1Database, apikey: string): Promise<App | null> {
	const hit = cache.get(apikey);
	if (hit && hit.expires > Date.now()) return hit.app;
	const inFlight = pending.get(apikey);
	if (inFlight) return inFlight;
	const lookup = findAppByApiKey(db, apikey)
		.then((app) => {
			if (app) cache.set(apikey, { app, expires: Date.now() + CACHE_TTL_MS });
			else cache.delete(apikey);
			return app;
		})
		.finally(() => pending.delete(apikey));
	pending.set(apikey, lookup);
	return lookup;
}

/**
 * Authenticates `apikey` + `privatekey` from a request body. Missing or wrong
 * credentials are a 401 whose message does not say which part was wrong.
 */
export async function authenticate(db: D1Database, body: Record<string, unknown>): Promise<App> {
	const { apikey, privatekey } = body;
	if (typeof apikey !== "string" || typeof privatekey !== "string" || apikey === "" || privatekey === "") {
		throw new ApiError(401, "missing_credentials", "apikey and privatekey are required strings.");
	}
	const app = apikey.length <= 200 ? await lookupApp(db, apikey) : null;
	const presented = await sha256Hex(privatekey);
	// Compare against a dummy hash for unknown keys too, so timing does not reveal which API keys exist.
	const expected = app?.privatekeyHash ?? "0".repeat(64);
	if (!constantTimeEqual(presented, expected) || !app) {
		throw new ApiError(401, "invalid_credentials", "Invalid apikey or privatekey.");
	}
	return app;
}
