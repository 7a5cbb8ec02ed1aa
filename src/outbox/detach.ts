/**
 * Detached attempts: a batch never waits for a slow endpoint longer
 * than DETACH_AFTER_MS (issue 33, "no tenant's burst delays another's
 * webhooks past 2 s").
 *
 * The queue hands the consumer its next batch only when this one is done
 * (`wrangler dev` strictly so; on Cloudflare each consumer invocation works
 * through its batch before more concurrency is considered,
 * developers.cloudflare.com/queues/configuration/consumer-concurrency/). A
 * delivery to an endpoint that hangs lasts its whole timeout (1.5 s,
 * deliver.ts), so every other app's event queued behind such a batch waited
 * that long, plus its own batch. Now the batch waits for its deliveries at
 * most DETACH_AFTER_MS after they start; a message whose work is still
 * running then is **detached**:
 *
 * - it is settled at once as a delayed retry, exactly as a failed attempt
 *   would be (`retryDelaySeconds` of its attempt), before the handler returns,
 *   so the queue keeps it whatever happens next (at least once: a crash or
 *   an eviction while the delivery runs loses nothing);
 * - its delivery goes on in the background (`ctx.waitUntil`) with its full
 *   timeout, and its attempt is logged and reported to the breaker when it
 *   ends, as in the batch;
 * - when the message comes back, an event the background delivery delivered
 *   is acked without sending (its `delivered_at`, read with the batch), and a
 *   failed one makes its next attempt, numbered by the queue as before.
 *
 * A message on its last attempt is not detached: its retry would move it to
 * the dead-letter queue even if the delivery then succeeded, so the batch
 * waits for it (at most one timeout, as before).
 *
 * That the handler's return ends the batch needs the compatibility flag
 * `queue_consumer_no_wait_for_wait_until` (wrangler.toml): by default the
 * platform acknowledges a batch only after the promises given to
 * `ctx.waitUntil()` resolved, which would make the batch wait for the
 * detached attempt all the same (developers.cloudflare.com/workers/configuration/compatibility-flags/,
 * "Queue consumers don't wait for ctx.waitUntil() to resolve"). Without the
 * flag the behaviour is still correct, only as slow as before.
 */

/**
 * How long a batch waits for its deliveries before detaching the unfinished
 * ones. A receiver still gets the whole webhook timeout (1.5 s) to answer;
 * this only bounds how long other apps' events wait behind it. Most
 * endpoints answer well within it, so a detached attempt (and the message's return to
 * be acked, one more queue operation and batch read) is the exception.
 */
export const DETACH_AFTER_MS = 500;

/**
 * Waits until every item of `finished` has settled or `budgetMs` passed,
 * whichever comes first, and in any case for `mustWait` (the items that may
 * not be detached). Never rejects.
 */
export async function waitWithin(finished: readonly Promise<void>[], budgetMs: number, mustWait: readonly Promise<void>[]): Promise<void> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	const budget = new Promise<void>((resolve) => {
		timer = setTimeout(resolve, budgetMs);
	});
	const settled = (all: readonly Promise<void>[]) => Promise.allSettled(all).then(() => {});
	try {
		await Promise.race([settled(finished), budget]);
		await settled(mustWait);
	} finally {
		clearTimeout(timer);
	}
}
