import type { RewardStatus, SettableStatus } from "./types";

/** Statuses a caller may set through changerewardstatus (`Rewarded` only comes from redemption). */
export const SETTABLE_STATUSES: readonly SettableStatus[] = ["Approved", "UnderReview", "Suspicious", "Rejected"];

/** True when `status` is one a caller may set. */
export function isSettableStatus(status: string): status is SettableStatus {
	return (SETTABLE_STATUSES as readonly string[]).includes(status);
}

/** The part of a reward a status change depends on. */
export interface TransitionSubject {
	status: RewardStatus;
	/** Hundredths already used: redeemed, or used to pay off clawbacks. */
	redeemed: number;
	/** True when a refund took back the whole reward (docs/rewards.md, "Refunds and clawbacks"). */
	fullyReversed?: boolean;
}

/**
 * Why a manual change of `reward` to `target` is refused, or null when it is
 * allowed (decisions.md §4). Setting the current status again is allowed: it
 * only updates the comment (and takes the reward out of automatic approval).
 */
export function transitionError(reward: TransitionSubject, target: string): string | null {
	if (!isSettableStatus(target)) return `status ${target} cannot be set; use one of ${SETTABLE_STATUSES.join(", ")}`;
	// Rewarded means paid out: changing it would rewrite history the user has already been given.
	if (reward.status === "Rewarded") return "a Rewarded reward cannot change status";
	// A refund took it all back: approving it again would pay for a purchase that was refunded.
	if (reward.fullyReversed) return "a fully reversed reward cannot change status";
	// Rejecting would take back money the user has already received.
	if (target === "Rejected" && reward.redeemed > 0) return "a partly redeemed reward cannot be Rejected";
	return null;
}
