import { rewardRow, updateReward } from "./mutations";
import { orderOf, payoutRow, payoutStatePatch, payoutsOf, queueDuePayouts, queuePayout, reconcileReward } from "./payouts";
import type { PayoutRow, RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";

/**
 * Unknown payout outcomes and their resolution (docs/stripe.md, "Unknown
 * outcomes"; issue 47). A payout still `sending` when Stripe forgets its
 * Idempotency-Key (24 h) can no longer be sent again: a resend with a new
 * key, or any new record of the reward, could pay what the first already
 * paid. It becomes `unknown`, which stops every booking of its reward
 * (payouts.ts), and the Stripe consumer looks it up: every balance
 * transaction the service creates names its payout in its metadata
 * (`payoutid`, the payout's key), so the customer's balance transactions,
 * newest first, say whether Stripe applied it. Its record then becomes
 * `paid` or `void` (never applied), and the reconcile books the difference.
 */

/** What the consumer looks for in the customer's balance transactions (integrations/stripe/payout-resolver.ts). */
export interface PayoutLookup {
	/** The payout's id: its Idempotency-Key, written as `payoutid` in the metadata of what it created. */
	key: string;
	rewarddtlid: string;
	n: number;
	customer: string;
	/** When it first left (ms since the epoch): a balance transaction created well before cannot be it. */
	sentAt: number;
}

/** What Stripe's record says: applied (the balance transaction's id), never applied, or undecided (and why). */
export type PayoutOutcome = { applied: true; stripeId: string } | { applied: false } | { undecided: string };

const UNKNOWN_PREFIX = "No answer from Stripe for ";

const unknownComment = (key: string) =>
	`${UNKNOWN_PREFIX}${key} within its key lifetime: the service is reading the customer's balance transactions to learn what Stripe did; nothing more is paid or taken back for this reward until then.`;

const undecidedComment = (key: string, why: string) =>
	`${UNKNOWN_PREFIX}${key} within its key lifetime, and Stripe's record does not tell yet (${why}): it is looked up again every few minutes; nothing more is paid or taken back for this reward until then.`;

export function lookupOf(tx: TxContext, reward: RewardRow, payout: PayoutRow): PayoutLookup {
	const order = orderOf(tx, reward, payout);
	return { key: order.key, rewarddtlid: order.rewarddtlid, n: payout.n, customer: order.customer, sentAt: payout.sent_at ?? 0 };
}

/**
 * Payout `payout` of `reward` was sent and never answered (no answer within
 * the key's lifetime, or Stripe refused its key as used with other
 * parameters): `unknown`, and queued, so the consumer looks it up.
 */
export function markUnknown(tx: TxContext, reward: RewardRow, payout: PayoutRow): void {
	tx.sql.exec(
		"UPDATE payouts SET state = 'unknown', error_code = 'unknown_outcome', updated_at = ? WHERE seq = ? AND n = ?",
		tx.nowMs,
		payout.seq,
		payout.n,
	);
	queuePayout(tx, payout.seq, payout.n);
	updateReward(tx, reward, { ...payoutStatePatch(tx, reward), comment: unknownComment(orderOf(tx, reward, payout).key) });
}

/** The consumer's `payoutUnknown`: only a payout still sending can become unknown. */
export function payoutUnknown(tx: TxContext, seq: number, n: number): boolean {
	const payout = payoutRow(tx.sql, seq, n);
	const reward = rewardRow(tx.sql, seq);
	if (!payout || !reward || payout.state !== "sending") return false;
	markUnknown(tx, reward, payout);
	return true;
}

/** Queues the lookup of reward `seq`'s unknown payouts untouched for `staleMs` again (a lost message, an undecided answer). */
export function requeueUnknown(tx: TxContext, seq: number, staleMs: number): number {
	let queued = 0;
	for (const payout of payoutsOf(tx.sql, seq)) {
		if (payout.state !== "unknown" || payout.updated_at > tx.nowMs - staleMs) continue;
		tx.sql.exec("UPDATE payouts SET updated_at = ? WHERE seq = ? AND n = ?", tx.nowMs, seq, payout.n);
		queuePayout(tx, seq, payout.n);
		queued++;
	}
	return queued;
}

/**
 * Records what Stripe did with unknown payout `n` of reward `seq`: `paid`
 * (the balance transaction found) or `void` (Stripe never applied it), then
 * books the difference between what the reward owes and what its payouts
 * booked (one of the reconcile's call sites, payouts.ts) and lets the
 * reward's next payouts leave. Undecided: stays unknown, with why.
 */
export function resolvePayout(tx: TxContext, seq: number, n: number, outcome: PayoutOutcome): boolean {
	const payout = payoutRow(tx.sql, seq, n);
	const reward = rewardRow(tx.sql, seq);
	if (!payout || !reward || payout.state !== "unknown") return false;
	const key = orderOf(tx, reward, payout).key;
	if ("undecided" in outcome) {
		tx.sql.exec("UPDATE payouts SET updated_at = ? WHERE seq = ? AND n = ?", tx.nowMs, seq, n);
		const comment = undecidedComment(key, outcome.undecided);
		if (reward.comment !== comment) updateReward(tx, reward, { comment });
		return true;
	}
	const stripeId = outcome.applied ? outcome.stripeId : null;
	tx.sql.exec(
		"UPDATE payouts SET state = ?, stripe_id = ?, error_code = NULL, updated_at = ? WHERE seq = ? AND n = ?",
		outcome.applied ? "paid" : "void",
		stripeId,
		tx.nowMs,
		seq,
		n,
	);
	const booked = reconcileReward(tx, reward);
	queueDuePayouts(tx, seq);
	const rewarded = booked.status === "Rewarded" && reward.status !== "Rewarded";
	updateReward(
		tx,
		reward,
		{
			...booked,
			payoutid: reward.payoutid ?? (stripeId !== null && payout.amount > 0 ? stripeId : null),
			...(reward.comment?.startsWith(UNKNOWN_PREFIX) ? { comment: null } : {}),
		},
		rewarded ? { type: "reward.status_changed", extra: { previousstatus: reward.status } } : undefined,
	);
	return true;
}
