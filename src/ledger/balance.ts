import { fromHundredths } from "./money";
import type { BalanceNumbers, BalanceRecord, RewardStatus } from "./types";

/** Bucket amounts in hundredths. */
export interface Buckets {
	pending: number;
	approved: number;
	claimed: number;
}

export const ZERO_BUCKETS: Readonly<Buckets> = Object.freeze({ pending: 0, approved: 0, claimed: 0 });

/**
 * What one reward adds to its balance row (decisions.md §4). The redeemed
 * part always counts as claimed, whatever the status, so a partly redeemed
 * reward put back under review does not un-pay the user.
 */
export function contribution(status: RewardStatus, amount: number, redeemed: number): Buckets {
	switch (status) {
		case "Rejected":
			return { ...ZERO_BUCKETS };
		case "UnderReview":
		case "Suspicious":
			return { pending: amount - redeemed, approved: 0, claimed: redeemed };
		case "Approved":
			return { pending: 0, approved: amount - redeemed, claimed: redeemed };
		case "Rewarded":
			return { pending: 0, approved: 0, claimed: amount };
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

/** One running-total row of the ledger's balances table. */
export interface BalanceRow extends Buckets {
	rewardunit: string;
	growthhack: string;
	campaignid: number;
	campaignname: string;
}

function numbers(b: Buckets): BalanceNumbers {
	return {
		total: fromHundredths(b.pending + b.approved + b.claimed),
		claimed: fromHundredths(b.claimed),
		pending: fromHundredths(b.pending),
		approved: fromHundredths(b.approved),
	};
}

function add(into: Buckets, b: Buckets): void {
	into.pending += b.pending;
	into.approved += b.approved;
	into.claimed += b.claimed;
}

/**
 * Nests balance rows as getuserbalance shows them: unit -> growth hack ->
 * campaign, each level with total = pending + approved + claimed. Sums are
 * taken in hundredths so every level adds up exactly. Order follows the rows.
 */
export function nestBalances(rows: readonly BalanceRow[]): BalanceRecord[] {
	const units = new Map<string, { sum: Buckets; hacks: Map<string, { sum: Buckets; campaigns: BalanceRow[] }> }>();
	for (const row of rows) {
		let unit = units.get(row.rewardunit);
		if (!unit) {
			unit = { sum: { ...ZERO_BUCKETS }, hacks: new Map() };
			units.set(row.rewardunit, unit);
		}
		let hack = unit.hacks.get(row.growthhack);
		if (!hack) {
			hack = { sum: { ...ZERO_BUCKETS }, campaigns: [] };
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
