import type { LeaderboardNameStyle } from "../domain/display-name";
import { type Bucket, bucketsOf } from "../domain/leaderboard";
import { fromHundredths } from "../rewards/money";
import { nameStyleOf } from "./campaigns";
import { tiesAheadSql } from "./leaderboard-ties";
import { firstRowOf, rowsOf } from "./rows";

/**
 * Leaderboard counters (`leaderboard_counts`, migration 0025) and the board's
 * read. The counters move with the reward projection (src/ledger/outbox.ts):
 * `leaderboardCounters` is batched just BEFORE a referrer reward's projection
 * upsert, in the same D1 transaction, so it compares the reward as projected
 * (before) with the ledger's row (after); a replayed or stale flush moves
 * nothing (the version guard), as in db/stats.ts. The projection queue's
 * batch sums the rewards it can per counter instead (db/leaderboard-batch.ts);
 * these per-reward statements remain for the others.
 */

/** What the counters need of a ledger's reward row (amounts in hundredths). */
export interface LeaderboardReward {
	seq: number;
	campaignid: number;
	usertype: string;
	friend_userkey: string;
	amount: number;
	reversed: number;
	status: string;
	version: number;
	created_at: string;
}

/**
 * A reward counts its friend while it is neither Rejected nor Suspicious and not fully reversed (docs/rewards.md,
 * "Leaderboards"; issue 47: a referrer whose rewards were all Suspicious topped the board). `earned` counts the same.
 */
const liveSql = "rewardstatus NOT IN ('Rejected', 'Suspicious') AND reward > 0";
/** Whether a reward's status keeps it off the board (its friend and its worth). */
export const offBoard = (status: string) => status === "Rejected" || status === "Suspicious";

/**
 * The counter statements of one referrer reward, one per bucket it falls in
 * (all time, its local month and week in `zone`). A friend is counted once per
 * bucket: it is added when its first live reward there appears, removed when
 * its last one stops being live (rejected or fully reversed); `earned` moves
 * by what the reward's worth changed. Empty for a friend's own rewards.
 */
export function leaderboardCounters(
	db: D1Database,
	appid: string,
	userkey: string,
	zone: string,
	row: LeaderboardReward,
	owners: OwnerStore = "one",
): D1PreparedStatement[] {
	if (row.usertype !== "Referrer" || !row.friend_userkey) return [];
	const live = !offBoard(row.status) && row.amount - row.reversed > 0;
	return bucketsOf(zone, row.created_at).flatMap((bucket) => counterStatements(db, appid, userkey, row, bucket, live, owners));
}

/**
 * Where the counters' database knows its erased users: "one", the control database's `users.erased_at`; "shard",
 * a shard's `erased_owners` (migrations-shard/0002, written by the erasure: db/privacy.ts), since a shard holds no
 * `users` (issue 50 phase 2b-1).
 */
export type OwnerStore = "one" | "shard";

/** SQL: whether the referrer `userkey` (an expression) of app `appid` (an expression) was erased, in `owners`' database. */
export function erasedOwnerSql(owners: OwnerStore, appid: string, userkey: string): string {
	return owners === "one"
		? `EXISTS (SELECT 1 FROM users u WHERE u.userkey = ${userkey} AND u.erased_at IS NOT NULL)`
		: `EXISTS (SELECT 1 FROM erased_owners e WHERE e.appid = ${appid} AND e.userkey = ${userkey})`;
}

/**
 * Two statements per bucket, of which at most one writes: when the friend's
 * count moves (or the counter does not exist yet), the upsert of the whole
 * counter; when only `earned` moves (a friend already counted, the usual
 * case of a referrer's second reward for the same friend), an UPDATE of
 * `earned` alone, which leaves the rank index (leaderboard_counts_rank, on
 * friends and reached_at) and the levels' trigger untouched: about 1 row
 * written instead of 3-4 (issue 33). Both are computed from the projection
 * before this reward's upsert, so the two agree on which one applies.
 */
function counterStatements(
	db: D1Database,
	appid: string,
	userkey: string,
	row: LeaderboardReward,
	bucket: Bucket,
	live: boolean,
	owners: OwnerStore,
): D1PreparedStatement[] {
	const projected = "FROM rewards WHERE rewarddtlid = ?1";
	const before = `COALESCE((SELECT CASE WHEN ${liveSql} THEN 1 ELSE 0 END ${projected}), 0)`;
	const earnedBefore = `COALESCE((SELECT CASE WHEN rewardstatus IN ('Rejected', 'Suspicious') THEN 0 ELSE reward END ${projected}), 0)`;
	// Another live reward of this referrer for this friend in the bucket keeps the friend counted (rewards_referrer_friend).
	const others = `EXISTS (SELECT 1 FROM rewards WHERE appid = ?2 AND userkey = ?5 AND friend_userkey = ?6 AND campaignid = ?3
	  AND usertype = 'Referrer' AND created_at >= ?10 AND created_at < ?11 AND rewarddtlid <> ?1 AND ${liveSql})`;
	const friends = `CASE WHEN ${others} THEN 0 ELSE ?7 - ${before} END`;
	const earned = `(?8 - ${earnedBefore})`;
	const newer = `?9 > COALESCE((SELECT version ${projected}), -1)`;
	// An erased referrer has no counters (erasePersonInD1 deletes them): a flush landing after the erasure adds none back.
	const erased = erasedOwnerSql(owners, "?2", "?5");
	const counter = "FROM leaderboard_counts WHERE appid = ?2 AND campaignid = ?3 AND bucket = ?4 AND userkey = ?5";
	const args = [
		`${userkey}-${row.seq}`,
		appid,
		row.campaignid,
		bucket.key,
		userkey,
		row.friend_userkey,
		live ? 1 : 0,
		offBoard(row.status) ? 0 : fromHundredths(row.amount - row.reversed),
		row.version,
		bucket.from,
		bucket.to,
		row.created_at,
	];
	const upsert = db
		.prepare(
			`INSERT INTO leaderboard_counts (appid, campaignid, bucket, userkey, friends, earned, reached_at)
			 SELECT ?2, ?3, ?4, ?5, f, e, ?12 FROM (SELECT ${friends} AS f, ${earned} AS e)
			 WHERE (f <> 0 OR (e <> 0 AND NOT EXISTS (SELECT 1 ${counter}))) AND ${newer} AND NOT ${erased}
			 ON CONFLICT (appid, campaignid, bucket, userkey) DO UPDATE SET friends = friends + excluded.friends,
			   earned = earned + excluded.earned,
			   reached_at = CASE WHEN excluded.friends > 0 THEN MAX(reached_at, excluded.reached_at) ELSE reached_at END`,
		)
		.bind(...args);
	const earnedOnly = db
		.prepare(
			`UPDATE leaderboard_counts SET earned = earned + ${earned}
			 WHERE appid = ?2 AND campaignid = ?3 AND bucket = ?4 AND userkey = ?5
			   AND ${friends} = 0 AND ${earned} <> 0 AND ${newer} AND NOT ${erased}`,
		)
		// ?12 (reached_at) is the upsert's alone.
		.bind(...args.slice(0, 11));
	// The UPDATE first: it sees the counter as it was, so an upsert that creates it cannot also be added to.
	return [earnedOnly, upsert];
}

const ZONE_TTL_MS = 30_000;
const zones = new Map<string, { zone: string; until: number }>();

/**
 * The app's time zone for the flush's buckets, kept 30 s per isolate (the
 * flush reads it once per pass, never again across an await): a zone change
 * reaches new rewards within 30 s; counted rewards keep their buckets.
 */
export async function appTimeZone(db: D1Database, appid: string): Promise<string> {
	const cached = zones.get(appid);
	if (cached && cached.until > Date.now()) return cached.zone;
	const row = await db.prepare("SELECT timezone FROM apps WHERE appid = ?").bind(appid).first<{ timezone: string | null }>();
	const zone = row?.timezone ?? "UTC";
	zones.set(appid, { zone, until: Date.now() + ZONE_TTL_MS });
	return zone;
}

/** One line of a board, before ranking. */
export interface BoardRow {
	userkey: string;
	name: string | null;
	email: string | null;
	friends: number;
	earned: number;
}

/** Where one user stands: null rank when the user has no friend counted in the bucket. */
export interface BoardStanding {
	userid: number;
	erased: boolean;
	rank: number | null;
	friends: number;
}

export interface BoardQuery {
	/** Whose counters: the app's own appid, a test twin's for its test board. */
	appid: string;
	campaignid: number;
	bucket: string;
	limit: number;
	/** A user whose standing is asked for, or null. */
	userkey: string | null;
}

/** The board's order of counter rows (`c`): more friends, then reached first, then the smaller userkey. */
export const BOARD_ORDER = "c.friends DESC, c.reached_at, c.userkey";
const ORDER = BOARD_ORDER;

/**
 * The top `limit` of a bucket and, when asked, one user's standing: ONE
 * round trip. The top is the head of leaderboard_counts_rank, with each row's
 * user found by its unique key (erased users have no counters; the filter
 * stays as a second guard). The standing sums maintained counters of the
 * referrers ahead of the user (standingLookup): a few seeks, whatever its rank.
 */
export async function readBoard(
	db: D1Database,
	q: BoardQuery & { campaignAppid: string },
): Promise<{ campaignFound: boolean; nameStyle: LeaderboardNameStyle; rows: BoardRow[]; standing: BoardStanding | null }> {
	// The campaign's name style rides on its existence check: no extra round trip.
	const campaign = db
		.prepare("SELECT 1 AS found, leaderboardnames FROM campaigns WHERE campaignid = ? AND appid = ?")
		// A test twin's campaigns are its live app's (App.campaignAppid, docs/test-mode.md); its counters are its own.
		.bind(q.campaignid, q.campaignAppid);
	const top = db
		.prepare(
			`SELECT c.userkey, u.name, u.email, c.friends, c.earned FROM leaderboard_counts c
			 JOIN users u ON u.userkey = c.userkey AND u.appid = c.appid
			 WHERE c.appid = ?1 AND c.campaignid = ?2 AND c.bucket = ?3 AND c.friends > 0 AND u.erased_at IS NULL
			 ORDER BY ${ORDER} LIMIT ?4`,
		)
		.bind(q.appid, q.campaignid, q.bucket, q.limit);
	const standing = standingLookup(db, { ...q, userkey: q.userkey ?? "" });
	const [found, rows, mine] = await db.batch(q.userkey === null ? [campaign, top] : [campaign, top, standing]);
	const me = firstRowOf<{ userid: number; erased: number; friends: number; rank: number | null }>(mine);
	const campaignRow = firstRowOf<{ found: number; leaderboardnames: string }>(found);
	return {
		campaignFound: campaignRow !== undefined,
		nameStyle: nameStyleOf(campaignRow?.leaderboardnames),
		rows: rowsOf<BoardRow>(rows),
		standing: me ? { userid: me.userid, erased: me.erased === 1, rank: me.rank, friends: me.friends } : null,
	};
}

/** SQL: the referrers with more friends than the counter row `m` on the board ?1, ?2, ?3, summed from its levels. */
export const LEVELS_AHEAD = `(SELECT COALESCE(SUM(l.referrers), 0) FROM leaderboard_levels l
	  WHERE l.appid = ?1 AND l.campaignid = ?2 AND l.bucket = ?3 AND l.friends > m.friends)`;

/**
 * Where one user stands in a bucket: its counter row by the primary key, and
 * its rank as 1 + the referrers ranked ahead of it: those with more friends,
 * summed from leaderboard_levels (one row per distinct count above the
 * user's, kept by triggers, migration 0030), and its ties that reached the
 * count first (reached_at, then userkey), summed from leaderboard_ties on a
 * count of many referrers, counted on the rank index on a count of fewer
 * than TIE_SLICES_FROM (db/leaderboard-ties.ts: bounded either way).
 * Erasure deletes an erased user's counters (erasePersonInD1), so neither
 * reads a user. With `ahead`, the rank reads at most `ahead + 1`.
 */
function standingLookup(db: D1Database, q: StandingQuery): D1PreparedStatement {
	const more = LEVELS_AHEAD;
	const ties = tiesAheadSql(q.ahead === undefined ? undefined : "?5");
	return db
		.prepare(
			`SELECT u.userid, u.erased_at IS NOT NULL AS erased, COALESCE(m.friends, 0) AS friends,
			   CASE WHEN m.friends > 0 THEN 1 + ${q.ahead === undefined ? `${more} + ${ties}` : `MIN(?5, ${more} + ${ties})`} END AS rank
			 FROM users u LEFT JOIN leaderboard_counts m ON m.appid = ?1 AND m.campaignid = ?2 AND m.bucket = ?3 AND m.userkey = u.userkey
			 WHERE u.userkey = ?4 AND u.appid = ?1`,
		)
		.bind(...[q.appid, q.campaignid, q.bucket, q.userkey], ...(q.ahead === undefined ? [] : [q.ahead]));
}

/**
 * A standing's query. `ahead`: a rank above `ahead` reads as `ahead + 1` (the share page names ranks up to 1000);
 * absent: the exact rank (getleaderboard). Either way the read costs a few seeks whatever the board's size.
 */
export type StandingQuery = Omit<BoardQuery, "limit"> & { userkey: string; ahead?: number };

/** One user's standing in a bucket (the share page's rank), or null when the user is not the app's: ONE round trip. */
export async function readStanding(db: D1Database, q: StandingQuery): Promise<BoardStanding | null> {
	const me = await standingLookup(db, q).first<{ userid: number; erased: number; friends: number; rank: number | null }>();
	return me ? { userid: me.userid, erased: me.erased === 1, rank: me.rank, friends: me.friends } : null;
}

/**
 * Deletes a user's counters (an erasure, db/privacy.ts): an erased user never appears on a board nor counts ahead of anyone.
 * A range of the table's own primary key, (appid, userkey, campaignid, bucket) since migration 0036.
 */
export function deleteLeaderboardCounters(db: D1Database, appid: string, userkey: string): D1PreparedStatement {
	return db.prepare("DELETE FROM leaderboard_counts WHERE appid = ? AND userkey = ?").bind(appid, userkey);
}
