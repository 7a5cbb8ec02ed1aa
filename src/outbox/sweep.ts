import { claimUnattemptedEvents, pendingEventIds } from "../db/outbox-events";
import { nowIso } from "../domain/dates";
import { ENQUEUE_CHUNK, enqueueOutboxEvents, sendEventIds } from "./events";

/**
 * An event handed to the queue and not attempted after this long lost its
 * message (docs/webhooks.md, "Nothing queued is lost"): the queue hands a
 * message to the consumer within seconds, and the consumer logs an attempt
 * for every event it handles (a breaker hold included). Long enough that a
 * short backlog does not send duplicates, short enough that a webhook lost in
 * a restart arrives within about three minutes (a cron sweep every minute).
 */
export const UNATTEMPTED_AFTER_MS = 2 * 60_000;

export interface SweepOptions {
	/** Events younger than this are left to their producer's own enqueue. */
	minAgeMs?: number;
	/** Events enqueued this long ago with no attempt are sent again (UNATTEMPTED_AFTER_MS). */
	unattemptedMs?: number;
	/** At most this many events per sweep and per kind (sent in chunks of ENQUEUE_CHUNK). */
	limit?: number;
	now?: number;
}

/**
 * Hands the queue the events recorded in D1 that never reached the consumer:
 *
 * - never enqueued (`enqueued_at IS NULL`, older than a minute): the enqueue
 *   failed, or never ran because the process died;
 * - enqueued but never attempted after UNATTEMPTED_AFTER_MS: the message was
 *   lost on its way (a restart of the queue, a crash). Each is claimed in the
 *   same statement that finds it (its `enqueued_at` moves to now), so it is
 *   sent again at most once per window, whatever sweeps run at once.
 *
 * Both are bounded and served by partial indexes (`outbox_pending`,
 * `outbox_unattempted`), so the sweep is cheap to call often. Messages carry
 * the event id only: the consumer reads the event from D1 and signs it with
 * the same `webhook-id` as any earlier send. An event sent twice (a sweep
 * racing a slow queue) is skipped by the consumer once delivered, and
 * receivers dedupe by `webhook-id`. Returns how many events were sent.
 */
export async function sweepOutbox(env: Env, options: SweepOptions = {}): Promise<number> {
	const { minAgeMs = 60_000, unattemptedMs = UNATTEMPTED_AFTER_MS, limit = 1000, now = Date.now() } = options;
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
	const resent = await resendUnattempted(env, new Date(now - unattemptedMs).toISOString(), limit);
	if (swept > 0) console.log(JSON.stringify({ msg: "outbox sweep enqueued events", count: swept }));
	if (resent > 0) console.log(JSON.stringify({ msg: "outbox sweep re-sent events enqueued but never attempted", count: resent }));
	return swept + resent;
}

/**
 * Claims and re-sends the events enqueued before `cutoff` and never attempted.
 * A claimed event whose send fails is not lost: it is claimed again one
 * window later.
 */
async function resendUnattempted(env: Env, cutoff: string, limit: number): Promise<number> {
	let resent = 0;
	while (resent < limit) {
		const ids = await claimUnattemptedEvents(env.DB, cutoff, nowIso(), Math.min(ENQUEUE_CHUNK, limit - resent));
		if (ids.length === 0) break;
		await sendEventIds(env, ids);
		resent += ids.length;
		if (ids.length < ENQUEUE_CHUNK) break;
	}
	return resent;
}
