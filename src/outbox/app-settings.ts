import type { DeliveryApp } from "../domain/delivery";

/**
 * Per-isolate cache of each app's delivery settings (webhook URL, signing
 * secret, email sender), like the app credentials of http/auth.ts: the queue
 * consumer reads them from D1 at most once per CACHE_TTL_MS per app. A
 * changed URL or a rotated secret is seen by other isolates within that time;
 * this isolate forgets at once (forgetDeliveryApp). `null`: the app is gone.
 *
 * A consumer batch never reads this cache twice: it takes one view of its
 * apps at its start (takeAppsView) and decides every message with that view.
 * A batch that waits seconds on slow endpoints outlives cache entries, and an
 * entry that expired between two reads looked like a deleted app: live apps'
 * webhooks were skipped as "the app no longer exists" (issue 36).
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

/**
 * One batch's settings of its apps, taken once: what the cache holds now is
 * copied into `view`; `missing` lists the apps to read from D1, whose answers
 * the batch adds with `addRead`. An app absent from the view was never
 * looked up: the caller retries its message rather than call the app gone.
 */
export interface AppsView {
	view: Map<string, DeliveryApp | null>;
	missing: string[];
	/** Adds what D1 answered for the batch (null: D1 says the app is gone) and caches it for later batches. */
	addRead(apps: ReadonlyMap<string, DeliveryApp | null>): void;
}

export function takeAppsView(appids: Iterable<string>, now: () => number = Date.now): AppsView {
	const view = new Map<string, DeliveryApp | null>();
	const missing: string[] = [];
	const at = now();
	for (const appid of new Set(appids)) {
		const cached = cachedDeliveryApp(appid, at);
		if (cached === undefined) missing.push(appid);
		else view.set(appid, cached);
	}
	return {
		view,
		missing,
		addRead(apps) {
			const readAt = now();
			for (const [appid, app] of apps) {
				rememberDeliveryApp(appid, app, readAt);
				view.set(appid, app);
			}
		},
	};
}
