/**
 * The ties ahead of a user on a board (issue 34, docs/rewards.md
 * "Leaderboards"): the referrers at the user's count of friends who reached
 * it first (an earlier `reached_at`, then a smaller userkey), summed from
 * maintained counters (`leaderboard_ties`, migration 0033) instead of one
 * index entry per tie, so a rank costs the same on a board of 100,000 ties
 * as on a board of ten. Only levels of many ties have those counters
 * (TIE_SLICES_FROM, migration 0035); a level of fewer counts its ties on the
 * rank index, which costs less to read than the slices cost to write.
 *
 * `leaderboard_ties` counts a board's referrers at each count by slices of
 * their `reached_at`: its first 4, 7, 10, 13, 16 and 19 characters (the
 * year, month, day, hour, minute and second of the ISO time; the widths are
 * the rows of `leaderboard_tie_widths`). Triggers on `leaderboard_counts`
 * keep it in the same statement as every write of a counter, so it moves
 * exactly when and as the counters do: the flush's version-guarded upserts,
 * reversals, an erasure's delete. The write that brings a level to
 * TIE_SLICES_FROM referrers counts that level's slices from its counters in
 * the same statement (once per level) and flags it; a flagged level keeps
 * its slices while it exists, whatever it shrinks to.
 */

/**
 * A level (board, count of friends) has tie slices once it holds this many
 * referrers (migration 0035, whose triggers carry the same number): below
 * it, its ties are counted on leaderboard_counts_rank, fewer than this many
 * index entries (under ~1 ms of D1 time at ~0.75 us an entry, issue 34's
 * measure), and a counter change on it writes no slice (issue 33: 42 of a
 * first reward's 68 D1 rows were slices of levels of a few referrers).
 */
export const TIE_SLICES_FROM = 1024;

/**
 * SQL of the number of referrers tied with the counter row `m` who rank
 * ahead of it, on the board `?1` (appid), `?2` (campaignid), `?3` (bucket).
 *
 * A level without slices (`ties` = 0 on its leaderboard_levels row: fewer
 * than TIE_SLICES_FROM referrers, since the write that brings it there
 * flags it) counts them on leaderboard_counts_rank: the range of its count
 * before `m`, fewer than TIE_SLICES_FROM entries (the bounded scan of the
 * query-plan guard).
 *
 * A level with slices: a row sorts before `m` exactly when, at the first
 * width where their slices differ, its slice sorts first (comparing prefixes
 * compares the texts), or when no slice differs and it sorts first within
 * that second. So the count is, per width, the counters of the slices of
 * `m`'s count that lie inside `m`'s own slice of the width above (`above`)
 * and sort before `m`'s own slice: one seek each, over at most the earlier
 * years, 11 months, 30 days, 23 hours, 59 minutes and 59 seconds (CROSS
 * JOIN: the six widths drive the seeks, never the other way round); plus the
 * ties inside `m`'s own second, a range of leaderboard_counts_rank that holds
 * only the referrers who reached that count in that same second (bounded by
 * how fast rewards come, not by the board's size).
 *
 * CASE evaluates only the branch taken, so a rank reads one of the two.
 * `limit`: a parameter that stops the ranges of the index (a bounded
 * standing, db/leaderboard.ts).
 */
export function tiesAheadSql(limit?: string): string {
	const sliced = `(SELECT ties FROM leaderboard_levels v WHERE v.appid = ?1 AND v.campaignid = ?2 AND v.bucket = ?3 AND v.friends = m.friends)`;
	const slices = `(SELECT COALESCE(SUM(t.referrers), 0) FROM leaderboard_tie_widths w CROSS JOIN leaderboard_ties t
	  ON t.appid = ?1 AND t.campaignid = ?2 AND t.bucket = ?3 AND t.friends = m.friends AND t.width = w.width
	  AND t.slice >= substr(m.reached_at, 1, w.above) AND t.slice < substr(m.reached_at, 1, w.width))`;
	const level = "FROM leaderboard_counts c WHERE c.appid = ?1 AND c.campaignid = ?2 AND c.bucket = ?3 AND c.friends = m.friends";
	const before = "AND (c.reached_at, c.userkey) < (m.reached_at, m.userkey)";
	const second = `${level} AND c.reached_at >= substr(m.reached_at, 1, (SELECT MAX(width) FROM leaderboard_tie_widths)) ${before}`;
	const count = (range: string) =>
		limit === undefined ? `(SELECT COUNT(*) ${range})` : `(SELECT COUNT(*) FROM (SELECT 1 ${range} LIMIT ${limit}))`;
	return `(CASE WHEN ${sliced} = 1 THEN ${slices} + ${count(second)} ELSE ${count(`${level} ${before}`)} END)`;
}
