import type { RewardStatus } from "./types";

/**
 * The arithmetic of refunds (docs/rewards.md, "Refunds and clawbacks"), as
 * pure functions over integer hundredths. reversal.ts applies it to the
 * ledger.
 */

/** The refunds an event already had in one ledger. */
export interface PriorRefunds {
	/** Refunded so far, in total. */
	refunded: number;
	/** True once the whole event was reversed. */
	full: boolean;
}

export type RefundDecision =
	| { kind: "exceeds"; refunded: number; transactionvalue: number }
	/** A full reversal of an event already fully reversed: nothing to do. */
	| { kind: "noop" }
	/** `refundvalue` is this refund's part; `refunded` the total after it; `full` when the whole event is now reversed. */
	| { kind: "apply"; refundvalue: number; refunded: number; full: boolean };

/**
 * What a refund of `requested` (null: the whole event) does to an event of
 * `transactionvalue` (null: sent without one) that already had `prior`
 * refunds. Partial refunds add up; more than the transaction value in total
 * is refused. An event without a value can only be reversed whole.
 */
export function decideRefund(prior: PriorRefunds, requested: number | null, transactionvalue: number | null): RefundDecision {
	const value = transactionvalue ?? 0;
	if (requested === null) {
		if (prior.full) return { kind: "noop" };
		return { kind: "apply", refundvalue: Math.max(0, value - prior.refunded), refunded: Math.max(value, prior.refunded), full: true };
	}
	const refunded = prior.refunded + requested;
	if (prior.full || refunded > value) return { kind: "exceeds", refunded: prior.refunded, transactionvalue: value };
	return { kind: "apply", refundvalue: requested, refunded, full: refunded >= value };
}

/**
 * `amount * refunded / transactionvalue`, rounded half-up, at most `amount`:
 * the part of a percent reward a refunded share takes back. Computed from the
 * running total, not refund by refund, so several partial refunds round once
 * and add up to exactly what one refund of their sum would take.
 */
export function proportionalPart(amount: number, refunded: number, transactionvalue: number): number {
	if (transactionvalue <= 0 || refunded >= transactionvalue) return amount;
	const a = BigInt(amount);
	const r = BigInt(refunded);
	const t = BigInt(transactionvalue);
	return Math.min(amount, Number((2n * a * r + t) / (2n * t)));
}

/** The part of a reward taken back once an event's refunds reached `refund` (never less than already taken). */
export function reversedTarget(
	reward: { amount: number; reversed: number; percent: boolean },
	refund: { full: boolean; refunded: number; transactionvalue: number | null },
): number {
	if (refund.full) return reward.amount;
	if (!reward.percent || !refund.transactionvalue) return reward.reversed;
	return Math.max(reward.reversed, proportionalPart(reward.amount, refund.refunded, refund.transactionvalue));
}

/** The part of a reward a reversal looks at. */
export interface ReversalSubject {
	status: RewardStatus;
	amount: number;
	reversed: number;
	redeemed: number;
	settled: number;
}

/**
 * The effect of taking back `target` of a reward in total: its new status
 * and the debt (clawback) the reversal creates. The reward is worth
 * `amount - target`; what was used of it (redeemed or used to pay debts)
 * beyond that worth is owed, less what an earlier reversal already made owed.
 * Worth nothing: `Rejected`. An approved reward used up to its new worth:
 * `Rewarded`. Otherwise the status stays.
 */
export function reversalEffect(reward: ReversalSubject, target: number): { status: RewardStatus; debt: number } {
	const used = reward.redeemed + reward.settled;
	const overBefore = Math.max(0, used - (reward.amount - reward.reversed));
	const worth = reward.amount - target;
	const overAfter = Math.max(0, used - worth);
	let status = reward.status;
	if (worth <= 0) status = "Rejected";
	else if (status === "Approved" && used >= worth) status = "Rewarded";
	return { status, debt: Math.max(0, overAfter - overBefore) };
}
