import type { Bucket } from "../domain/leaderboard";

/**
 * The one-off recount of the current month's and week's leaderboard counters
 * (migration 0047, operations/leaderboard-recount.ts): the apps still queued
 * in `leaderboard_recounts`, and one chunk of an app's counters recounted
 * from the projected rewards under the board's rule (db/leaderboard.ts,
 * liveSql: neither Rejected nor Suspicious, not fully reversed).
 */

/** The first app still queued, where its recount stands, and its time zone (UTC for an app gone since). */
export async function nextRecount(db: D1Database): Promise<{ appid: string; after: string; timezone: string } | null> {
	const row = await db
		.prepare(
			`SELECT r.appid, r.after_userkey AS after, COALESCE(a.timezone, 'UTC') AS timezone
			 FROM leaderboard_recounts r LEFT JOIN apps a ON a.appid = r.appid ORDER BY r.appid LIMIT 1`,
		)
		.first<{ appid: string; after: string; timezone: string }>();
	return row ?? null;
}

/** A referrer reward of the counter's referrer and campaign created in [?3, ?4) that the board counts (rewards_referrer_friend). */
const counted = `FROM rewards r WHERE r.appid = leaderboard_counts.appid AND r.userkey = leaderboard_counts.userkey
  AND r.campaignid = leaderboard_counts.campaignid AND r.usertype = 'Referrer' AND r.friend_userkey IS NOT NULL
  AND r.friend_userkey <> '' AND r.created_at >= ?3 AND r.created_at < ?4 AND r.rewardstatus NOT IN ('Rejected', 'Suspicious')`;

/**
 * Recounts the counters in `buckets` of the app's referrers after `after`,
 * `limit` counter rows at a time (any bucket; the last referrer's rows all
 * go with it). Returns the last userkey of the chunk, or null when none was
 * left (the app's row is then deleted). The chunk and the cursor move in one
 * batch, so a run that dies repeats a chunk at most, which recounts the same.
 *
 * Bounded: the chunk is a range of the counters' primary key (appid, userkey,
 * ...) of at most `limit` rows plus the last referrer's other rows; each
 * counter recounted reads its referrer's rewards on rewards_referrer_friend,
 * as the flush's own counter statements do. A counter is set in one
 * statement from the projection as it stands, and the flush moves counters
 * by the projection's differences in the same transaction as the
 * projection: a flush before or after it leaves the counter exact. The
 * UPDATE moves the levels and ties by their triggers (migration 0036) and
 * keeps `reached_at` (a decrease keeps it, docs/rewards.md).
 */
export async function recountChunk(db: D1Database, appid: string, after: string, buckets: Bucket[], limit: number): Promise<string | null> {
	const chunk = await db
		.prepare(
			`SELECT MAX(userkey) AS last FROM (SELECT userkey FROM leaderboard_counts WHERE appid = ? AND userkey > ? ORDER BY userkey LIMIT ?)`,
		)
		.bind(appid, after, limit)
		.first<{ last: string | null }>();
	const last = chunk?.last ?? null;
	if (last === null) {
		await db.prepare("DELETE FROM leaderboard_recounts WHERE appid = ?").bind(appid).run();
		return null;
	}
	await db.batch([
		...buckets.map((bucket) =>
			db
				.prepare(
					`UPDATE leaderboard_counts SET
					   friends = (SELECT COUNT(DISTINCT r.friend_userkey) ${counted} AND r.reward > 0),
					   earned = (SELECT COALESCE(SUM(r.reward), 0) ${counted})
					 WHERE appid = ?1 AND userkey > ?5 AND userkey <= ?6 AND bucket = ?2`,
				)
				.bind(appid, bucket.key, bucket.from, bucket.to, after, last),
		),
		db.prepare("UPDATE leaderboard_recounts SET after_userkey = ? WHERE appid = ?").bind(last, appid),
	]);
	return last;
}
