import { type BalanceRow, nestBalances } from "./balance";
import { toLedgerReward, toView } from "./rows";
import type { RewardRow } from "./schema";
import type { BalanceFilter, BalanceRecord, LedgerReward, RewardView } from "./types";

/**
 * The ledger's reads that change nothing: pages of rewards, the rewards
 * friends produced, balances from the running totals. Each is bounded, so
 * no read costs a user's whole history.
 */

/**
 * SQL conditions (and their arguments) for the optional filters shared by
 * balances and redemption; the growth hack is matched without regard to case.
 */
export function filterClause(filter: { campaignid?: number; growthhack?: string; rewardunit?: string }) {
	const where: string[] = [];
	const args: (string | number)[] = [];
	if (filter.campaignid !== undefined) {
		where.push("campaignid = ?");
		args.push(filter.campaignid);
	}
	if (filter.growthhack !== undefined) {
		where.push("growthhack = ? COLLATE NOCASE");
		args.push(filter.growthhack);
	}
	if (filter.rewardunit !== undefined) {
		where.push("rewardunit = ?");
		args.push(filter.rewardunit);
	}
	return { where, args };
}

/** Rewards of the ledger, oldest first, a page at a time: at most `limit` (<= 1000) after reward number `afterSeq`. */
export function listRewards(sql: SqlStorage, userkey: string, limit: number, afterSeq: number): LedgerReward[] {
	return sql
		.exec<RewardRow>("SELECT * FROM rewards WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, Math.min(Math.max(limit, 1), 1000))
		.toArray()
		.map((row) => toLedgerReward(userkey, row));
}

/**
 * The rewards each of the given friends produced for this user: the newest
 * `limit` of each, newest first, and how many there are in all. Every
 * friend asked for gets an entry (maybe empty). Bounded, so one friend with
 * thousands of rewards cannot make a page heavy.
 */
export function rewardsForFriends(
	sql: SqlStorage,
	userkey: string,
	friendUserkeys: string[],
	limit: number,
): Record<string, { rewards: RewardView[]; total: number }> {
	const out: Record<string, { rewards: RewardView[]; total: number }> = {};
	const unique = [...new Set(friendUserkeys)];
	for (const key of unique) out[key] = { rewards: [], total: 0 };
	for (const key of unique) {
		// Both through the rewards_friend (friend_userkey, seq) index.
		const rows = sql.exec<RewardRow>("SELECT * FROM rewards WHERE friend_userkey = ? ORDER BY seq DESC LIMIT ?", key, limit).toArray();
		const total =
			rows.length < limit
				? rows.length
				: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM rewards WHERE friend_userkey = ?", key).one().n;
		out[key] = { rewards: rows.map((row) => toView(userkey, row)), total };
	}
	return out;
}

/** getuserbalance, read from the running totals only (cost grows with campaigns, not rewards). */
export function balances(sql: SqlStorage, filter: BalanceFilter): BalanceRecord[] {
	const { where, args } = filterClause(filter);
	const rows = sql
		.exec<BalanceRow & Record<string, SqlStorageValue>>(
			`SELECT * FROM balances ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY rewardunit, growthhack, campaignid`,
			...args,
		)
		.toArray();
	return nestBalances(rows);
}
