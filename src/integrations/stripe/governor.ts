import { DurableObject } from "cloudflare:workers";

/**
 * One governor per connected Stripe account (docs/stripe.md, "Stripe's rate
 * limits"; issue 47): a Durable Object named by the account (pace.ts), the
 * single place that hands out the moments at which the service's payout
 * requests to that account may leave, evenly spaced at the configured rate.
 * A request reserves the next free moment and waits for it; when that
 * moment is further off than the caller will wait, nothing is reserved and
 * the caller puts its work back on the queue for later, so a burst queues
 * and drains at the rate instead of hitting Stripe's limit. A 429 from
 * Stripe pushes every later moment back.
 *
 * A Durable Object rather than the platform's rate limiter binding: that
 * one only counts per location and per 10 or 60 s window and says yes or
 * no, so a burst would still leave all at once within a window, and Stripe
 * counts per second across the whole account. Its state is memory only: an
 * object evicted while idle has no pace to remember.
 */
export class StripeGovernor extends DurableObject<Env> {
	/** When the next request may leave (ms since the epoch). */
	private next = 0;

	/** Reserves the next moment at `perSecond` a second: how long to wait for it, or, beyond `maxWaitMs`, how long the queue is. */
	reserve(perSecond: number, maxWaitMs: number): { waitMs: number } | { deferMs: number } {
		const now = Date.now();
		const at = Math.max(now, this.next);
		if (at - now > maxWaitMs) return { deferMs: at - now };
		this.next = at + 1000 / perSecond;
		return { waitMs: at - now };
	}

	/** Stripe answered 429 (rate limited): nothing more leaves for `ms`. */
	slowDown(ms: number): void {
		this.next = Math.max(this.next, Date.now() + ms);
	}
}
