import type { RewardGrant } from "../ledger/types";

/**
 * Tiers (issue 34; docs/rewards.md, "Tiers"): the n-th reward of a Referrer
 * rule for one referrer (its rewards of that rule that are not Rejected,
 * this one included) is worth the tier with the largest `fromcount` <= n,
 * the rule's own amount below the first tier. Pure: the referrer's ledger,
 * the only writer of its rewards, counts n and calls this in the grant's
 * transaction, so concurrent conversions cannot both be "the 5th".
 */

/** A tier as a grant carries it: the amount it pays, already computed like the rule's own (percent, cap, rounding). */
export type GrantTier = NonNullable<RewardGrant["tiers"]>[number];

/** The amount of the n-th reward (n >= 1): `base` below the first tier. Tiers are sorted by increasing fromcount. */
export function tierAmount(base: number, tiers: readonly GrantTier[], n: number): number {
	let amount = base;
	for (const tier of tiers) if (tier.fromcount <= n) amount = tier.amount;
	return amount;
}
