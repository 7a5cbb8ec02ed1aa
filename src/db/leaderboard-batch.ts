import { bucketsOf } from "../domain/leaderboard";
import { rewardId } from "../domain/ledger-ids";
import { fromHundredths } from "../rewards/money";
import { erasedOwnerSql, type LeaderboardReward, type OwnerStore, offBoard } from "./leaderboard";

/**
 * The leaderboard counters of a projection batch summed per counter (issue
 * 33, rows written per conversion): a referrer with 50 friends converting
 * inside one batch moved its counter 50 times in each of its three buckets
 * (the counter row, its rank index entry, one level out and one in: 4 rows
 * each), and now moves it once per bucket per batch, to the same final state.
 *
 * Exact because each reward's part is computed exactly as
 * leaderboardCounters (db/leaderboard.ts) computes it one by one, against the
 * projection as it was before the batch, which is what one by one sees for
 * these rewards: a reward summed is once in the batch, and no other reward
 * of its referrer and campaign in the batch has its friend (summableRewards),
 * so no statement of the batch changes what its part reads (its own projected
 * row, the referrer's other rewards for that friend) before its turn. The
 * parts then add up per counter: `friends` and `earned` are sums; one by one
 * raises `reached_at` to a reward's time when that reward adds a friend and
 * keeps it otherwise, so it ends at the latest of those times (or the
 * counter's own); a counter that does not exist yet is created by its first
 * reward, with that reward's time. The triggers of migration 0035 then move
 * the levels and tie slices from the counter's state before to its state
 * after, as the last of the one-by-one changes leaves them. What one by one
 * would write and the sum does not: a level passed through inside the batch
 * (one referrer in, then out: a row left at 0 referrers where there was none,
 * and, on a level of exactly 1,023 unflagged referrers, its tie slices
 * counted and its flag set). Both stay exact for every rank (levels at 0 add
 * nothing; an unflagged level of 1,023 counts its ties on the rank index).
 */

/** Rewards per statement: keeps its one JSON parameter (about 250 bytes a reward) far below D1's limits. */
const SUMMED_PER_STATEMENT = 100;

/** A referrer reward of the batch, with its app's time zone (the buckets it counts in). */
export interface BatchedLeaderboardReward {
	appid: string;
	userkey: string;
	zone: string;
	row: LeaderboardReward;
}

const isReferrerReward = (row: LeaderboardReward) => row.usertype === "Referrer" && Boolean(row.friend_userkey);

/**
 * The ids (rewardId) of the batch's referrer rewards whose counters can be
 * summed: those of a referrer and campaign whose rewards in the batch are
 * each once in it and each for a different friend. Any other reward of such
 * a referrer and campaign (the same reward twice, at two versions; two
 * rewards for the same friend, whose "other live reward" guards read each
 * other) keeps the per-reward statements for ALL of them, in batch order, so
 * a counter is moved by one of the two ways only. `rewards`: in batch order.
 */
export function summableRewards(rewards: { appid: string; userkey: string; row: LeaderboardReward }[]): Set<string> {
	const groups = new Map<string, { ids: Set<string>; friends: Set<string>; ok: boolean }>();
	for (const { appid, userkey, row } of rewards) {
		if (!isReferrerReward(row)) continue;
		const key = JSON.stringify([appid, userkey, row.campaignid]);
		const group = groups.get(key) ?? { ids: new Set<string>(), friends: new Set<string>(), ok: true };
		groups.set(key, group);
		const id = rewardId(userkey, row.seq);
		if (group.ids.has(id) || group.friends.has(row.friend_userkey)) group.ok = false;
		group.ids.add(id);
		group.friends.add(row.friend_userkey);
	}
	return new Set([...groups.values()].filter((g) => g.ok).flatMap((g) => [...g.ids]));
}

/**
 * Per reward, what leaderboardCounters binds one by one: `f` the friend it
 * adds (1), removes (-1) or not (0), `e` what its worth changed; only when
 * its version is newer than the projected one and its referrer is not
 * erased. Then per counter (app, campaign, bucket, referrer): the sums, the
 * latest time of a reward that added a friend (`raised`), the time a new
 * counter is created with (its first reward's, or a later one that added a
 * friend), and whether any reward moved the count (`moved`).
 */
const sums = (owners: OwnerStore) => `WITH j AS (
	  SELECT r.key AS i, r.value ->> 0 AS id, r.value ->> 1 AS appid, r.value ->> 2 AS campaignid, r.value ->> 3 AS userkey,
	    r.value ->> 4 AS friend, r.value ->> 5 AS live, r.value ->> 6 AS earned, r.value ->> 7 AS version, r.value ->> 8 AS created,
	    b.value ->> 0 AS bucket, b.value ->> 1 AS bfrom, b.value ->> 2 AS bto
	  FROM json_each(?1) r, json_each(r.value -> 9) b
	), parts AS (
	  SELECT j.i, j.appid, j.campaignid, j.bucket, j.userkey, j.created,
	    CASE WHEN EXISTS (SELECT 1 FROM rewards o WHERE o.appid = j.appid AND o.userkey = j.userkey AND o.friend_userkey = j.friend
	        AND o.campaignid = j.campaignid AND o.usertype = 'Referrer' AND o.created_at >= j.bfrom AND o.created_at < j.bto
	        AND o.rewarddtlid <> j.id AND o.rewardstatus NOT IN ('Rejected', 'Suspicious') AND o.reward > 0) THEN 0
	      ELSE j.live - COALESCE(CASE WHEN p.rewardstatus NOT IN ('Rejected', 'Suspicious') AND p.reward > 0 THEN 1 ELSE 0 END, 0) END AS f,
	    j.earned - COALESCE(CASE WHEN p.rewardstatus IN ('Rejected', 'Suspicious') THEN 0 ELSE p.reward END, 0) AS e
	  FROM j LEFT JOIN rewards p ON p.rewarddtlid = j.id
	  WHERE j.version > COALESCE(p.version, -1)
	    AND NOT ${erasedOwnerSql(owners, "j.appid", "j.userkey")}
	), moving AS (
	  SELECT *, MIN(i) OVER (PARTITION BY appid, campaignid, bucket, userkey) AS first FROM parts WHERE f <> 0 OR e <> 0
	), g AS (
	  SELECT appid, campaignid, bucket, userkey, SUM(f) AS f, SUM(e) AS e, MAX(f <> 0) AS moved,
	    MAX(CASE WHEN f > 0 THEN created END) AS raised, MAX(CASE WHEN f > 0 OR i = first THEN created END) AS created
	  FROM moving GROUP BY appid, campaignid, bucket, userkey
	)`;

/**
 * The summed counter statements of `rewards` (those of summableRewards, in
 * batch order), batched BEFORE every projection upsert of the batch. Two per
 * chunk, as leaderboardCounters has two per bucket: an UPDATE of `earned`
 * alone for the counters whose count no reward moves (the rank index and the
 * triggers untouched), then the upsert of the others; the UPDATE changes
 * nothing the upsert's selection reads (which counters exist, the
 * projection).
 */
export function batchLeaderboardCounters(
	db: D1Database,
	rewards: BatchedLeaderboardReward[],
	owners: OwnerStore = "one",
): D1PreparedStatement[] {
	const SUMS = sums(owners);
	const statements: D1PreparedStatement[] = [];
	for (let i = 0; i < rewards.length; i += SUMMED_PER_STATEMENT) {
		const chunk = JSON.stringify(
			rewards
				.slice(i, i + SUMMED_PER_STATEMENT)
				.map(({ appid, userkey, zone, row }) => [
					rewardId(userkey, row.seq),
					appid,
					row.campaignid,
					userkey,
					row.friend_userkey,
					!offBoard(row.status) && row.amount - row.reversed > 0 ? 1 : 0,
					offBoard(row.status) ? 0 : fromHundredths(row.amount - row.reversed),
					row.version,
					row.created_at,
					bucketsOf(zone, row.created_at).map((b) => [b.key, b.from, b.to]),
				]),
		);
		const counter = (t: string) =>
			`${t}.appid = g.appid AND ${t}.userkey = g.userkey AND ${t}.campaignid = g.campaignid AND ${t}.bucket = g.bucket`;
		statements.push(
			db
				.prepare(
					`${SUMS} UPDATE leaderboard_counts SET earned = earned + g.e FROM g WHERE ${counter("leaderboard_counts")} AND g.moved = 0`,
				)
				.bind(chunk),
			db
				.prepare(
					`${SUMS} INSERT INTO leaderboard_counts (appid, campaignid, bucket, userkey, friends, earned, reached_at)
					 SELECT g.appid, g.campaignid, g.bucket, g.userkey, g.f, g.e,
					   CASE WHEN k.userkey IS NULL THEN g.created WHEN g.raised IS NULL THEN k.reached_at ELSE MAX(k.reached_at, g.raised) END
					 FROM g LEFT JOIN leaderboard_counts k ON ${counter("k")}
					 WHERE g.moved = 1 OR k.userkey IS NULL
					 ON CONFLICT (appid, campaignid, bucket, userkey) DO UPDATE SET friends = friends + excluded.friends,
					   earned = earned + excluded.earned, reached_at = excluded.reached_at`,
				)
				.bind(chunk),
		);
	}
	return statements;
}
