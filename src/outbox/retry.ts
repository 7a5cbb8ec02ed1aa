/**
 * When a failed delivery is tried again. The queue consumer in wrangler.toml
 * has `max_retries = 6`: a message is delivered at most 7 times, then the
 * platform moves it to the dead-letter queue `referral-outbox-dlq`.
 */

/** Delay after the failure of attempt 1, 2, ... 6: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h. */
export const RETRY_DELAYS_SECONDS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600] as const;

/** Keep equal to `max_retries` of the `referral-outbox` consumer in wrangler.toml. */
export const MAX_RETRIES = 6;

/** Deliveries of one message before the platform dead-letters it. */
export const MAX_ATTEMPTS = MAX_RETRIES + 1;

/**
 * Seconds to wait before the next attempt after attempt `attempt` (1-based,
 * as `Message.attempts` counts) failed. Past the schedule the last delay
 * holds; Queues accepts at most 12 h.
 */
export function retryDelaySeconds(attempt: number): number {
	const index = Math.min(Math.max(Math.floor(attempt), 1), RETRY_DELAYS_SECONDS.length) - 1;
	return RETRY_DELAYS_SECONDS[index]!;
}

/** True when a failure of this attempt sends the message to the dead-letter queue. */
export function isLastAttempt(attempt: number): boolean {
	return attempt >= MAX_ATTEMPTS;
}

/**
 * An event row not visible yet (the D1 batch that recorded it may not have
 * reached this replica): tried again quickly a few times, then dropped.
 */
export const MISSING_EVENT_ATTEMPTS = 4;

export function missingEventDelaySeconds(attempt: number): number {
	return Math.min(5 * 2 ** (Math.max(attempt, 1) - 1), 60);
}
