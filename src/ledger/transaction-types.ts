import type { LedgerAudit } from "../db/audit";
import type { LedgerReward, RewardStatus, StatusChange } from "./types";

/**
 * The types the ledger's transaction modules share (issue 31): what a
 * transaction runs with, the operations a multi-ledger transaction carries,
 * and what they answer. Types only, imported by the modules that write
 * (mutations.ts, reversal.ts, transaction-kinds.ts, coupons.ts, ...) and
 * the stored-JSON schemas, so no circle closes through them.
 */

/** Who the ledger belongs to and when the current transaction happens. */
export interface TxContext {
	sql: SqlStorage;
	appid: string;
	userkey: string;
	nowMs: number;
	/**
	 * The ledger's tables were created right before this transaction (its first write, writer.ts): it started
	 * with no rewards, refunds or erasure, so what would only read those may skip the read.
	 */
	empty?: true;
	/**
	 * Inside a grant that announces its conversion: the projections the transaction queued (seq -> version),
	 * written at its end with the `conversion.recorded` event in one of them (grant.ts, outbox-queue.ts queueProjectionOf).
	 */
	projections?: Map<number, number>;
}

/** A refund of a conversion event as a ledger operation (reversal.ts). */
export type ReverseOperation = {
	kind: "reverse";
	customid: string;
	/**
	 * The event's user (its friend): every reward of the event names it as its friend, so the ledger seeks the event's
	 * rewards by it (ledger schema step 17, by-friend.ts). Absent from a payload stored before step 17: read by customid.
	 */
	friendUserkey?: string;
	/** Names the refund: a repeat with the same id is the same refund. */
	refundid: string;
	/** The refunded part of the transaction value, or null to reverse the whole event. */
	refundvalue: number | null;
	/**
	 * Instead of a part: what was refunded of the payment in total so far (a Stripe charge's
	 * `amount_refunded`). The ledger takes what its refunds did not take yet, so duplicated,
	 * concurrent and reordered totals converge to the largest one; a total at or above the
	 * transaction value reverses the whole event.
	 */
	refundedTotal?: number | null;
	/** The event's transaction value (null when it was sent without one). */
	transactionvalue: number | null;
	/** Kept as the comment of the rewards it changes. */
	reason: string | null;
};

/** One reward's state as a reversal reports it. */
export interface RewardSnapshot {
	rewardstatus: RewardStatus;
	reward: number;
	reversedamount: number;
	/** Redeemed by the user so far (unchanged by a reversal: what was spent stays spent, as a clawback). */
	redeemed: number;
}

export interface ReversedReward {
	rewarddtlid: string;
	userkey: string;
	usertype: string;
	rewardunit: string;
	before: RewardSnapshot;
	after: RewardSnapshot;
	/** Taken back by this refund. */
	reversedamount: number;
	/** Of that, what was already redeemed: the clawback it created. */
	clawback: number;
}

/** What one refund did in one ledger (amounts in units). */
export interface ReversalOutcome {
	customid: string;
	refundid: string;
	/** This refund's part of the transaction value (for a full reversal: what was left). */
	refundvalue: number;
	/** Refunded in total after it. */
	refunded: number;
	transactionvalue: number | null;
	/** True when the whole event is reversed. */
	full: boolean;
	/** False when the refund was already applied (a repeat) or the event was already fully reversed. */
	changed: boolean;
	/** True when this refund was applied before: the outcome is the first one's. */
	repeat?: boolean;
	rewards: ReversedReward[];
}

/** A change a ledger can take part in through a multi-ledger transaction (transaction-kinds.ts). */
export type LedgerOperation = ({ kind: "status"; changes: StatusChange[] } | ReverseOperation) & {
	/** Who asks: each reward it changes gets an audit entry in the same transaction (audit.ts). */
	audit?: LedgerAudit;
};

/** What a ledger operation answers. */
export interface LedgerOperationResult {
	rewards: LedgerReward[];
	/** A refund's outcome in this ledger (kind `reverse`). */
	reversal?: ReversalOutcome;
}

/** What a claim or a release names: the reward, its globally unique key in D1's `coupons.reward_key`, and the pool. */
export interface CouponClaim {
	seq: number;
	/** Globally unique key of the reward in D1's `coupons.reward_key`, so a replayed claim finds its code again. */
	couponKey: string;
	campaignid: number;
}
