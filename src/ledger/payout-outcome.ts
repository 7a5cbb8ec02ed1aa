import { rewardRow, type TxContext, updateReward } from "./mutations";
import { type PayoutOrder, payoutOrderOf, requeueDuePayouts } from "./payouts";

/**
 * What the Stripe consumer learned of a payout (integrations/stripe/payouts.ts),
 * written into the reward in one transaction (docs/stripe.md):
 * - paid: the balance transaction's id; an Approved reward becomes Rewarded;
 * - failed: Stripe refused (a 4xx); the reward stays Approved with Stripe's
 *   reason as its comment and a `reward.payout_failed` webhook;
 * - waiting: the user has no paymentcustomerid yet; paid once one is set.
 * A repeat (a redelivered queue message) changes nothing twice.
 */
export type PayoutOutcome = { paid: string } | { failed: string } | { waiting: true };

export const WAITING_COMMENT = "Waiting for a paymentcustomerid: paid into Stripe as soon as updateuser sets one.";

export function recordPayoutOutcome(tx: TxContext, seq: number, outcome: PayoutOutcome): PayoutOrder | null {
	const row = rewardRow(tx.sql, seq);
	if (row?.rewardtype !== "Stripe" || row.payoutid !== null) return row ? payoutOrderOf(tx.userkey, row) : null;
	let after = row;
	if ("paid" in outcome) {
		// Paid is paid: the id is kept even if the reward's status moved on while the payout was under way.
		const rewarded = row.status === "Approved";
		after = updateReward(
			tx,
			row,
			{
				payoutid: outcome.paid,
				payout_state: "paid",
				...(rewarded ? { status: "Rewarded" as const, rewarded_at: new Date(tx.nowMs).toISOString(), hold_until: null } : {}),
			},
			rewarded ? { type: "reward.status_changed", extra: { previousstatus: row.status } } : undefined,
		);
	} else if (row.status === "Approved" && "failed" in outcome) {
		after = updateReward(
			tx,
			row,
			{ comment: outcome.failed, payout_state: "failed" },
			{ type: "reward.payout_failed", extra: { reason: outcome.failed } },
		);
	} else if (row.status === "Approved" && row.payout_state !== "waiting_customer") {
		after = updateReward(tx, row, { comment: WAITING_COMMENT, payout_state: "waiting_customer" });
	}
	return payoutOrderOf(tx.userkey, after);
}

/** Pays again what is due: after a paymentcustomerid was set, or an operator's retry. */
export const retryDuePayouts = (tx: TxContext) => ({ queued: requeueDuePayouts(tx) });
