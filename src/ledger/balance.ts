import { fromHundredths } from "../rewards/money";
import type { BalanceNumbers, BalanceRecord, RewardStatus } from "./types";

/** Bucket amounts in hundredths. */
export interface Buckets {
	pending: number;
	approved: number;
	claimed: number;
}

export const ZERO_BUCKETS: Readonly<Buckets> = Object.freeze({ pending: 0, approved: 0, claimed: 0 });

/**
 * What one reward adds to its balance row (decisions.md §4, refunds in
 * docs/rewards.md). A reward is worth `amount - reversed` (refunds take back
 * `reversed`) and has been used up to `redeemed + settled` (redeemed by the
 * user, or used to pay off a clawback). The used part, up to the worth,
 * counts as claimed whatever the status, so a partly redeemed reward put
 * back under review does not un-pay the user; the rest is pending or
 * approved by status. Used beyond the worth (a refund after redemption) is
 * not here: it is a clawback, counted as `owed` (clawbacks.ts).
 */
export function contribution(status: RewardStatus, amount: number, redeemed: number, reversed = 0, settled = 0): Buckets {
	const worth = amount - reversed;
	const used = Math.min(redeemed + settled, worth);
	switch (status) {
		case "Rejected":
			return { ...ZERO_BUCKETS };
		case "UnderReview":
		case "Suspicious":
			return { pending: worth - used, approved: 0, claimed: used };
		case "Approved":
			return { pending: 0, approved: worth - used, claimed: used };
		case "Rewarded":
			return { pending: 0, approved: 0, claimed: worth };
	}
}

/** after - before, bucket by bucket: what a change of one reward does to its balance row. */
export function bucketDelta(before: Buckets, after: Buckets): Buckets {
	return { pending: after.pending - before.pending, approved: after.approved - before.approved, claimed: after.claimed - before.claimed };
}

/** True when the delta changes nothing. */
export function isZeroDelta(delta: Buckets): boolean {
	return delta.pending === 0 && delta.approved === 0 && delta.claimed === 0;
}

/** One running-total row of the ledger's balances table; `owed` is its unpaid clawbacks (hundredths). */
export interface BalanceRow extends Buckets {
	owed: number;
	rewardunit: string;
	growthhack: string;
	campaignid: number;
	campaignname: string;
}

type Sums = Buckets & { owed: number };

function numbers(b: Sums): BalanceNumbers {
	return {
		total: fromHundredths(b.pending + b.approved + b.claimed),
		claimed: fromHundredths(b.claimed),
		pending: fromHundredths(b.pending),
		approved: fromHundredths(b.approved),
		owed: fromHundredths(b.owed),
	};
}

function add(into: Sums, b: Sums): void {
	into.pending += b.pending;
	into.approved += b.approved;
	into.claimed += b.claimed;
	into.owed += b.owed;
}

/**
 * Nests balance rows as getuserbalance shows them: unit -> growth hack ->
 * campaign, each level with total = pending + approved + claimed (and the
 * `owed` clawbacks beside them, outside the total). Sums are
 * taken in hundredths so every level adds up exactly. Order follows the rows.
 */
export function nestBalances(rows: readonly BalanceRow[]): BalanceRecord[] {
	const units = new Map<string, { sum: Sums; hacks: Map<string, { sum: Sums; campaigns: BalanceRow[] }> }>();
	for (const row of rows) {
		let unit = units.get(row.rewardunit);
		if (!unit) {
			unit = { sum: { ...ZERO_BUCKETS, owed: 0 }, hacks: new Map() };
			units.set(row.rewardunit, unit);
		}
		let hack = unit.hacks.get(row.growthhack);
		if (!hack) {
			hack = { sum: { ...ZERO_BUCKETS, owed: 0 }, campaigns: [] };
			unit.hacks.set(row.growthhack, hack);
		}
		add(unit.sum, row);
		add(hack.sum, row);
		hack.campaigns.push(row);
	}
	return [...units].map(([rewardunit, unit]) => ({
		rewardunit,
		...numbers(unit.sum),
		growthhacks: [...unit.hacks].map(([growthhack, hack]) => ({
			growthhack,
			rewardunit,
			...numbers(hack.sum),
			campaigns: hack.campaigns.map((c) => ({
				campaignid: c.campaignid,
				campaignname: c.campaignname,
				growthhack,
				rewardunit,
				...numbers(c),
			})),
		})),
	}));
}
