import type { Distribution } from "../db/campaigns";
import type { FraudSignal } from "../fraud/signals";

/**
 * The RPC contract of UserLedger (one Durable Object per app + user, named
 * `${appid}:${userkey}`). Amounts cross this boundary as numbers with at most
 * two decimals; inside the ledger they are integer hundredths.
 */

export type RewardStatus = "Approved" | "UnderReview" | "Suspicious" | "Rejected" | "Rewarded";
export type SettableStatus = "Approved" | "UnderReview" | "Suspicious" | "Rejected";
export type UserType = "Friend" | "Referrer";

/** The user whose action produced a reward (snapshot taken at grant time). */
export interface FriendSnapshot {
	userkey: string;
	email: string | null;
	name: string | null;
	profileimage: string | null;
}

/** One reward the rules engine decided to give this ledger's user. */
export interface RewardGrant {
	/** Idempotency key, unique in this ledger: `${customid}:${ruleid}`. A second grant with the same key returns the first reward. */
	key: string;
	ruleid: number;
	/** How many rewards this rule may give this user for this friend; 0 = no limit. Checked inside the ledger. */
	rewardfrequency: number;
	usertype: UserType;
	amount: number;
	rewardunit: string;
	rewardtype: Distribution;
	campaignid: number;
	campaignname: string;
	growthhack: string;
	eventname: string;
	customid: string;
	friend: FriendSnapshot;
	/** Fraud signals that fired for the event (src/fraud/signals.ts), whether or not they made it Suspicious; absent: none. */
	fraudsignals?: FraudSignal[];
	/** Status on creation: Approved, UnderReview (hold running) or Suspicious (fraud check flagged it). */
	status: "Approved" | "UnderReview" | "Suspicious";
	/** When an UnderReview reward approves itself (ISO), or null for no automatic approval. */
	holdUntil: string | null;
	comment: string | null;
	/** True when the amount is a percent of the transaction value: a partial refund reduces it in proportion. */
	percent?: boolean;
	/**
	 * A tiered Referrer rule's tiers (docs/rewards.md, "Tiers"), increasing by fromcount: the ledger counts this rule's
	 * rewards that are not Rejected and pays the tier of that count + 1 instead of `amount`. Absent: `amount`.
	 */
	tiers?: { fromcount: number; amount: number }[];
	/** A milestone Referrer rule's N (docs/rewards.md, "Milestones"): the ledger pays `amount` once, when N distinct friends had the event. */
	milestone?: number;
	/**
	 * Whether the campaign sends the reward-earned email, decided with the event's context read (db/events.ts), so
	 * a reward nobody is emailed about costs its ledger's flush no D1 read. Absent: the flush reads it (docs/messages.md).
	 */
	rewardemail?: boolean;
	/**
	 * False when the app had no webhook endpoint when the event happened, read with the event's context (db/events.ts)
	 * in the same round trip: its `reward.created` is not queued, since nothing would be sent (docs/webhooks.md). Absent:
	 * queued, and the flush's D1 guard drops it for an app without an endpoint (every path that gives no hint).
	 */
	webhooks?: boolean;
}

/** A reward as the public API shows it (field names of the spec's Reward). */
export interface RewardView {
	rewarddtlid: string;
	rewardstatus: RewardStatus;
	comment: string;
	eventname: string;
	reward: string;
	rewardunit: string;
	rewardedon: string;
	rewardtype: Distribution;
	usertype: UserType;
	coupon: string;
	couponimage: string;
	coupondetails: string;
	couponname: string;
	campaignid: string;
	campaignname: string;
	growthhack: string;
	friendemail: string;
	friendname: string;
	friendprofileimage: string;
	/** Fraud signal codes recorded when the reward was created (docs/fraud.md); [] when none fired. */
	fraudsignals: FraudSignal[];
	/** True once a refund took back part or all of the reward (docs/rewards.md, "Refunds and clawbacks"). */
	reversed: boolean;
	/** The part refunds took back; `reward` is what is left of it. */
	reversedamount: string;
	/** The Stripe balance transaction that paid a Stripe reward (docs/stripe.md); "" when none. */
	payoutid: string;
}

/** A reward with the ledger's bookkeeping, for internal callers. */
export interface LedgerReward extends RewardView {
	key: string;
	friendUserkey: string;
	/** The amount granted; the reward is worth `amount - reversedAmount` (the view's `reward`). */
	amount: number;
	redeemed: number;
	/** Taken back by refunds. */
	reversedAmount: number;
	/** Used to pay off clawbacks. */
	settled: number;
	createdAt: string;
	updatedAt: string;
	/** When an UnderReview reward approves itself (ISO); null once a status was set by hand or none was given. */
	holdUntil: string | null;
	/** When the reward became Rewarded (ISO), else null. */
	rewardedAt: string | null;
	/** Increases with every change; the D1 projection keeps the highest. */
	version: number;
}

export interface GrantResult {
	/** The reward of each grant that was not skipped: newly created or found by key. */
	rewards: (LedgerReward & { created: boolean })[];
	/** Grants skipped because the rule's rewardfrequency was reached. */
	skipped: { key: string; reason: "frequency_limit" | "user_erased" | "zero_amount" | "milestone_pending" | "milestone_paid" }[];
	/**
	 * This ledger's records, taken for the caller's message when it asked (a conversion's referrer's grant for its
	 * friend's ledger: conversion-grant.ts, issue 49), as the JSON of one projection message (db/projection-batch.ts;
	 * its webhook payloads and audit changes hold `unknown`, which the RPC types do not carry); absent otherwise and
	 * never passed on to the Worker.
	 */
	carried?: string;
	/**
	 * The records of this grant's rewards (new, or found by key), handed back instead of queued in this ledger's
	 * outbox, when the caller asked for them (`carry` "records": a conversion's referrer, whose friend's ledger
	 * writes them with its own grant: ledger/carried-records.ts, issue 49), as the JSON of one message part.
	 */
	records?: string;
}

export interface BalanceNumbers {
	total: number;
	claimed: number;
	pending: number;
	approved: number;
	/** Unpaid clawbacks: redeemed credit a refund took back, paid off first by the next approved rewards. */
	owed: number;
}

/** getuserbalance's three levels: unit -> growth hack -> campaign. */
export interface BalanceRecord extends BalanceNumbers {
	rewardunit: string;
	growthhacks: (BalanceNumbers & {
		growthhack: string;
		rewardunit: string;
		campaigns: (BalanceNumbers & { campaignid: number; campaignname: string; growthhack: string; rewardunit: string })[];
	})[];
}

export type LedgerError =
	| { code: "reward_not_found"; rewarddtlid: string; message: string }
	| { code: "invalid_status_transition"; rewarddtlid: string; message: string }
	| { code: "insufficient_balance"; message: string; approved: number }
	| { code: "reward_not_redeemable"; rewarddtlid: string; message: string }
	| { code: "not_wallet_distribution"; rewarddtlid: string; message: string }
	| { code: "invalid_amount"; message: string }
	| { code: "reward_locked"; rewarddtlid: string; message: string }
	| { code: "rewardunit_required"; rewardunits: string[]; message: string }
	| { code: "transaction_aborted"; message: string }
	| { code: "invalid_operation"; message: string }
	| { code: "idempotency_key_reused"; message: string }
	| { code: "refund_exceeds_transaction"; message: string; transactionvalue: number; refunded: number }
	| { code: "refundid_reused"; message: string }
	| { code: "user_erased"; message: string };

export type LedgerResult<T> = ({ ok: true } & T) | { ok: false; error: LedgerError };

export interface StatusChange {
	rewarddtlid: string;
	status: SettableStatus;
	message: string | null;
}

export interface RedeemByAmount {
	/** More than 0; rounded half-up to hundredths. */
	amount: number;
	campaignid?: number;
	/** Matched case-insensitively. */
	growthhack?: string;
	/** Only rewards of this unit; required when the approved rewards under the other filters span several units. */
	rewardunit?: string;
	/** The request's Idempotency-Key: recorded with the debit, in the same transaction. */
	idempotency?: LedgerIdempotency;
}

/** What a redemption answers (redeemByAmount, redeemByIds): the amount redeemed and the rewards it used. */
export interface Redemption {
	redeemed: number;
	rewards: LedgerReward[];
}

/** An Idempotency-Key as the ledger records it: a repeat with the same fingerprint answers the first result. */
export interface LedgerIdempotency {
	key: string;
	fingerprint: string;
}

/** Filters of getuserbalance. */
export interface BalanceFilter {
	campaignid?: number;
	/** Matched case-insensitively. */
	growthhack?: string;
}

/** What one outbox flush pass did (for tests and admin). */
export interface FlushReport {
	/** Entries delivered and removed from the outbox. */
	done: number;
	/** Entries still waiting: failed (backing off) or not yet due. */
	pending: number;
}

/**
 * The `conversion.recorded` webhook a grant queues in the same transaction
 * as its rewards (so it leaves with the records it reports): `payload`
 * without `rewards`, which become this ledger's rewards of the grant followed
 * by `otherRewards` (the referrer's, granted before).
 */
export interface ConversionAnnouncement {
	eventid: string;
	payload: Record<string, unknown>;
	otherRewards: Record<string, unknown>[];
}
