import { pendingEventIds } from "../db/outbox-events";
import { ENQUEUE_CHUNK, enqueueOutboxEvents } from "./events";

export interface SweepOptions {
	/** Events younger than this are left to their producer's own enqueue. */
	minAgeMs?: number;
	/** At most this many events per sweep (sent in chunks of ENQUEUE_CHUNK). */
	limit?: number;
	now?: number;
}

/**
 * Hands the queue the events recorded in D1 whose enqueue failed (or never
 * ran because the process died): `enqueued_at IS NULL` and older than a
 * minute. Bounded, and served by the `outbox_pending` partial index, so it is
 * cheap to call often. Returns how many events were enqueued.
 *
 * Sweeping an event twice at once (two sweeps, or a sweep racing its
 * producer) enqueues it twice; the consumer sends nothing for an event
 * already delivered, and receivers dedupe by `webhook-id`.
 */
export async function sweepOutbox(env: Env, options: SweepOptions = {}): Promise<number> {
	const { minAgeMs = 60_000, limit = 1000, now = Date.now() } = options;
	const cutoff = new Date(now - minAgeMs).toISOString();
	let swept = 0;
	// Pages of ENQUEUE_CHUNK: each page's ids fit one statement's bound parameters; enqueued events leave the index.
	while (swept < limit) {
		const ids = await pendingEventIds(env.DB, cutoff, Math.min(ENQUEUE_CHUNK, limit - swept));
		if (ids.length === 0) break;
		await enqueueOutboxEvents(env, ids);
		swept += ids.length;
		if (ids.length < ENQUEUE_CHUNK) break;
	}
	if (swept > 0) console.log(JSON.stringify({ msg: "outbox sweep enqueued events", count: swept }));
	return swept;
}
