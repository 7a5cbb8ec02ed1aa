import { type BalanceRow, nestBalances } from "./balance";
import { RULES } from "./by-friend";
import { markCouponsSeen } from "./coupons";
import { toLedgerReward, toView, VIEW_COLUMNS, type ViewRow } from "./rows";
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
 * friend asked for gets an entry (maybe empty). One statement for the whole
 * page: per friend, its Referrer rewards (all a friend produces for its
 * referrer) through rewards_rule_friend_event, one seek per rule (by-friend.ts:
 * ledger schema step 16 dropped the index by friend), numbered newest first
 * and counted, then the newest `limit` of each read whole by number. The
 * joins are CROSS so the friends and rules stay the outer loops, and the
 * rewards table is only ever sought. `+n.usertype`: the unary plus keeps
 * SQLite from keying an automatic index on usertype; in an analyzed ledger
 * (ANALYZE, PRAGMA optimize) of 2,400 rewards it built one from every
 * Referrer reward on each page instead of seeking (rule, friend), 31-35 ms
 * a 50-friend page against 2 ms (the query-plan guard's seeded condition).
 * `shownToUser`: the answer goes out through the public API, so the coupon
 * codes it holds count as seen (coupons.ts); admin reads leave them as they are.
 */
export function rewardsForFriends(
	sql: SqlStorage,
	userkey: string,
	friendUserkeys: string[],
	limit: number,
	shownToUser = false,
): Record<string, { rewards: RewardView[]; total: number }> {
	const out: Record<string, { rewards: RewardView[]; total: number }> = {};
	const unique = [...new Set(friendUserkeys)];
	for (const key of unique) out[key] = { rewards: [], total: 0 };
	if (unique.length === 0) return out;
	const rows = sql.exec<ViewRow & Pick<RewardRow, "friend_userkey" | "coupon_seen_at"> & { total: number }>(
		`WITH RECURSIVE ${RULES}, ranked AS (
		   SELECT n.seq AS pick, COUNT(*) OVER (PARTITION BY n.friend_userkey) AS total,
		     ROW_NUMBER() OVER (PARTITION BY n.friend_userkey ORDER BY n.seq DESC) AS k
		   FROM json_each(?1) j CROSS JOIN rules CROSS JOIN rewards n
		   WHERE rules.id IS NOT NULL AND n.ruleid = rules.id AND n.friend_userkey = j.value AND +n.usertype = 'Referrer'
		 )
		 SELECT ${VIEW_COLUMNS}, r.friend_userkey, r.coupon_seen_at, ranked.total FROM ranked CROSS JOIN rewards r ON r.seq = ranked.pick
		 WHERE ranked.k <= ?2 ORDER BY r.seq DESC`,
		JSON.stringify(unique),
		limit,
	);
	const shown: Pick<RewardRow, "seq" | "coupon" | "coupon_seen_at">[] = [];
	// Each row as it comes (a rest pattern to drop `total` would copy every column of every row).
	for (const row of rows) {
		const entry = out[row.friend_userkey];
		if (!entry) continue;
		entry.total = row.total;
		entry.rewards.push(toView(userkey, row));
		shown.push(row);
	}
	if (shownToUser) markCouponsSeen(sql, shown, Date.now());
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
