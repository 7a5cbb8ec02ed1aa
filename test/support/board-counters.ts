import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { TIE_SLICES_FROM } from "../../src/db/leaderboard-ties";

/**
 * The leaderboard's maintained counters agree with the counter rows they
 * count (issue 34): the referrers at each count (leaderboard_levels,
 * migration 0030) and at each count and slice of reached_at
 * (leaderboard_ties, migration 0033), recounted from leaderboard_counts, in
 * every bucket of the app. Slices only for the levels flagged `ties`, every
 * level of TIE_SLICES_FROM referrers or more flagged (migration 0035). No
 * tie slice at zero or below.
 */
export async function expectBoardCountersAgree(appid: string): Promise<void> {
	const read = async (sql: string) => (await env.DB.prepare(sql).bind(appid).all()).results;
	const levels = await read(
		"SELECT campaignid, bucket, friends, referrers FROM leaderboard_levels WHERE appid = ? AND referrers <> 0 ORDER BY campaignid, bucket, friends",
	);
	const counted = await read(
		`SELECT campaignid, bucket, friends, COUNT(*) AS referrers FROM leaderboard_counts WHERE appid = ? AND friends > 0
		 GROUP BY campaignid, bucket, friends ORDER BY campaignid, bucket, friends`,
	);
	expect(levels).toEqual(counted);
	expect(levels.length).toBeGreaterThan(0);
	const unflagged = await read(
		`SELECT bucket, friends, referrers FROM leaderboard_levels WHERE appid = ? AND ties = 0 AND referrers >= ${TIE_SLICES_FROM}`,
	);
	expect(unflagged).toEqual([]);
	const ties = await read(
		`SELECT campaignid, bucket, friends, width, slice, referrers FROM leaderboard_ties WHERE appid = ? AND referrers <> 0
		 ORDER BY campaignid, bucket, friends, width, slice`,
	);
	const sliced = await read(
		`SELECT c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width) AS slice, COUNT(*) AS referrers
		 FROM leaderboard_counts c, leaderboard_tie_widths w WHERE c.appid = ? AND c.friends > 0
		   AND EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = c.appid AND l.campaignid = c.campaignid AND l.bucket = c.bucket
		     AND l.friends = c.friends AND l.ties = 1)
		 GROUP BY c.campaignid, c.bucket, c.friends, w.width, slice ORDER BY c.campaignid, c.bucket, c.friends, w.width, slice`,
	);
	expect(ties).toEqual(sliced);
	// None below zero, and none at zero: an emptied slice is deleted (migration 0033), the table never grows with history.
	const empty = await read("SELECT COUNT(*) AS n FROM leaderboard_ties WHERE appid = ? AND referrers <= 0");
	expect(empty).toEqual([{ n: 0 }]);
}
