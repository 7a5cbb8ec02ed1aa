import { usersWithOpenPayouts } from "../../db/payout-redrive";
import { shardPool } from "../../db/shards";
import { claimStaleInboxEvents } from "../../db/stripe-inbox";
import { ledgerFor } from "../../ledger/stub";
import { inboxMessage } from "./handle";

/**
 * The scheduled job's share of Stripe work (docs/stripe.md, "Stuck payouts"):
 * a payout `due` or `sending` that nothing moved for REDRIVE_AFTER_MS (its
 * queue message lost in a crash, dead-lettered after its retries) is sent
 * again from its ledger with its frozen key and amount, or, when Stripe no
 * longer keeps its key, marked unknown and looked up in Stripe's record
 * (payout-outcome.ts, payout-resolution.ts); an unknown payout is looked up
 * again while it stays undecided.
 *
 * Long enough that a payout in its queue's normal backoff (5 s, 15 s, 45 s,
 * ... 15 min) is usually left to it; a re-drive racing the queue is harmless
 * anyway: both send the same key with the same amount, and the ledger
 * records the first answer only.
 */
export const REDRIVE_AFTER_MS = 15 * 60_000;

interface StripeSettings {
	/** Tests: re-drive sooner (milliseconds). */
	STRIPE_REDRIVE_AFTER_MS?: string;
	/** Tests: how long Stripe keeps an Idempotency-Key, as the re-drive counts it (milliseconds; payout-outcome.ts). */
	STRIPE_KEY_LIFETIME_MS?: string;
	/** Tests: send stored events again sooner (milliseconds). */
	STRIPE_INBOX_RESEND_AFTER_MS?: string;
}

export function redriveAfterMs(env: Env): number {
	const configured = Number((env as Env & StripeSettings).STRIPE_REDRIVE_AFTER_MS);
	return Number.isFinite(configured) && configured > 0 ? configured : REDRIVE_AFTER_MS;
}

/** Stripe's key lifetime as the re-drive counts it: 23 h, shorter in tests (STRIPE_KEY_LIFETIME_MS). */
export function keyLifetimeMs(env: Env): number | undefined {
	const configured = Number((env as Env & StripeSettings).STRIPE_KEY_LIFETIME_MS);
	return Number.isFinite(configured) && configured > 0 ? configured : undefined;
}

export async function redriveStuckPayouts(env: Env, now = Date.now()): Promise<{ users: number; redriven: number; failed: number }> {
	const staleMs = redriveAfterMs(env);
	const lifetime = keyLifetimeMs(env);
	// Every shard too: a sharded app's rewards are there (issue 50 phase 2b-1).
	const users = await usersWithOpenPayouts(env.DB, new Date(now - staleMs).toISOString(), 100, await shardPool(env));
	let redriven = 0;
	let failed = 0;
	// One ledger at a time: at most 100 calls a minute, each a short transaction.
	for (const { appid, userkey } of users) {
		const result = await ledgerFor(env, appid, userkey).redrivePayouts(staleMs, lifetime);
		if (result.ok) {
			redriven += result.redriven;
			failed += result.failed;
		}
	}
	return { users: users.length, redriven, failed };
}

/** An event stored and not done this long ago lost its message (or waits in the queue's backoff): sent again. */
export const INBOX_RESEND_AFTER_MS = 5 * 60_000;

/** Sends again the Stripe events stored and not done (db/stripe-inbox.ts): no event answered 2xx is lost to a crash. */
export async function sweepStripeInbox(env: Env, now = Date.now()): Promise<number> {
	const configured = Number((env as Env & StripeSettings).STRIPE_INBOX_RESEND_AFTER_MS);
	const after = Number.isFinite(configured) && configured > 0 ? configured : INBOX_RESEND_AFTER_MS;
	const events = await claimStaleInboxEvents(env.DB, now - after, now, 100);
	if (events.length > 0) await env.STRIPE_WORK.sendBatch(events.map((e) => ({ body: { stripeEvent: inboxMessage(e) } })));
	return events.length;
}
