import type { DeliveryApp } from "./deliveries";

/**
 * Per-isolate cache of each app's delivery settings (webhook URL, signing
 * secret, email sender), like the app credentials of http/auth.ts: the queue
 * consumer reads them from D1 at most once per CACHE_TTL_MS per app. A
 * changed URL or a rotated secret is seen by other isolates within that time;
 * this isolate forgets at once (forgetCachedApp). `null`: the app is gone.
 */
const CACHE_TTL_MS = 30_000;
const cache = new Map<string, { app: DeliveryApp | null; expires: number }>();

/** The cached settings, or undefined when they must be read. */
export function cachedDeliveryApp(appid: string, now = Date.now()): DeliveryApp | null | undefined {
	const hit = cache.get(appid);
	return hit && hit.expires > now ? hit.app : undefined;
}

export function rememberDeliveryApp(appid: string, app: DeliveryApp | null, now = Date.now()): void {
	cache.set(appid, { app, expires: now + CACHE_TTL_MS });
}

export function forgetDeliveryApp(appid: string): void {
	cache.delete(appid);
}
