import { compareKeys } from "../domain/shard-merge";
import type { Layout } from "./app-layout";
import { nameStyleOf } from "./campaigns";
import { rankAcrossShards, topAcrossShards } from "./fanout";
import {
	BOARD_ORDER,
	type BoardQuery,
	type BoardRow,
	type BoardStanding,
	LEVELS_AHEAD,
	readBoard,
	readStanding,
	type StandingQuery,
} from "./leaderboard";
import { tiesAheadSql } from "./leaderboard-ties";
import { firstRowOf, rowsOf } from "./rows";
import { type ShardedEnv, shardPool } from "./shards";

/**
 * A board read for either layout (issue 50 phase 2b-1, docs/scaling.md
 * "Admin views across shards"). An app in the "one" layout reads as before
 * (db/leaderboard.ts: one round trip). A sharded app's counters are in each
 * referrer's home shard, with that shard's levels and tie slices, so:
 *
 * - the top N is each shard's top N on leaderboard_counts_rank, merged in
 *   the board's order (friends, reached_at, userkey: a userkey is in one
 *   shard only, so the merge is exact), then ONE read of the control
 *   database names them (an erased user has no counters, its erasure
 *   deletes them in its shard; the users read drops one anyway, as the
 *   one database's join does);
 * - a user's rank is 1 + the sum over shards of the referrers ahead of its
 *   counter row (its friends and reached_at, read from its home shard): each
 *   shard counts them on its levels and tie slices exactly as the one
 *   database counts them on its own, a few seeks each.
 *
 * Round trips: the campaign and the shards' tops at once, then the names;
 * a standing: the user and its counter at once, then every shard at once.
 */

interface CounterRow {
	userkey: string;
	friends: number;
	earned: number;
	reached_at: string;
}

interface BoardAnswer {
	campaignFound: boolean;
	nameStyle: ReturnType<typeof nameStyleOf>;
	rows: BoardRow[];
	standing: BoardStanding | null;
}

const byBoardOrder = (a: CounterRow, b: CounterRow) =>
	b.friends - a.friends || compareKeys([a.reached_at, a.userkey], [b.reached_at, b.userkey]);

/** The board of `q` for an app of `layout`, with `q.userkey`'s standing when asked. */
export async function readAppBoard(env: ShardedEnv, layout: Layout, q: BoardQuery & { campaignAppid: string }): Promise<BoardAnswer> {
	if (layout === "one") return readBoard(env.DB, q);
	const pool = await shardPool(env);
	const campaignRead = env.DB.prepare("SELECT 1 AS found, leaderboardnames FROM campaigns WHERE campaignid = ? AND appid = ?")
		.bind(q.campaignid, q.campaignAppid)
		.first<{ found: number; leaderboardnames: string }>();
	const topRead = topAcrossShards(
		pool,
		q.limit,
		async (db, n) =>
			rowsOf<CounterRow>(
				await db
					.prepare(
						`SELECT c.userkey, c.friends, c.earned, c.reached_at FROM leaderboard_counts c
						 WHERE c.appid = ?1 AND c.campaignid = ?2 AND c.bucket = ?3 AND c.friends > 0 ORDER BY ${BOARD_ORDER} LIMIT ?4`,
					)
					.bind(q.appid, q.campaignid, q.bucket, n)
					.all(),
			),
		byBoardOrder,
	);
	const standingRead = q.userkey === null ? Promise.resolve(null) : readShardedStanding(env, { ...q, userkey: q.userkey });
	const [campaign, top, standing] = await Promise.all([campaignRead, topRead, standingRead]);
	const names = await namesOf(
		env.DB,
		q.appid,
		top.map((r) => r.userkey),
	);
	return {
		campaignFound: campaign !== null,
		nameStyle: nameStyleOf(campaign?.leaderboardnames),
		rows: top.flatMap((r) => {
			const user = names.get(r.userkey);
			return user ? [{ userkey: r.userkey, name: user.name, email: user.email, friends: r.friends, earned: r.earned }] : [];
		}),
		standing,
	};
}

/** The live (not erased) users among `userkeys` of the app, by their unique userkey: one statement. */
async function namesOf(
	db: D1Database,
	appid: string,
	userkeys: string[],
): Promise<Map<string, { name: string | null; email: string | null }>> {
	if (userkeys.length === 0) return new Map();
	const result = await db
		.prepare(
			"SELECT userkey, name, email FROM users WHERE userkey IN (SELECT value FROM json_each(?2)) AND appid = ?1 AND erased_at IS NULL",
		)
		.bind(appid, JSON.stringify(userkeys))
		.all();
	return new Map(rowsOf<{ userkey: string; name: string | null; email: string | null }>(result).map((u) => [u.userkey, u]));
}

/** One user's standing for an app of `layout` (the share page's rank), or null when the user is not the app's. */
export async function readAppStanding(env: ShardedEnv, layout: Layout, q: StandingQuery): Promise<BoardStanding | null> {
	return layout === "one" ? readStanding(env.DB, q) : readShardedStanding(env, q);
}

async function readShardedStanding(env: ShardedEnv, q: StandingQuery): Promise<BoardStanding | null> {
	const pool = await shardPool(env);
	const [user, mine] = await Promise.all([
		env.DB.prepare("SELECT userid, erased_at IS NOT NULL AS erased FROM users WHERE userkey = ? AND appid = ?")
			.bind(q.userkey, q.appid)
			.first<{ userid: number; erased: number }>(),
		pool
			.for(q.appid, q.userkey)
			.prepare("SELECT friends, reached_at FROM leaderboard_counts WHERE appid = ? AND userkey = ? AND campaignid = ? AND bucket = ?")
			.bind(q.appid, q.userkey, q.campaignid, q.bucket)
			.first<{ friends: number; reached_at: string }>(),
	]);
	if (!user) return null;
	const friends = mine?.friends ?? 0;
	if (!mine || friends <= 0) return { userid: user.userid, erased: user.erased === 1, rank: null, friends };
	// Each shard counts the referrers ahead of the user's counter row `m` (given, not read: it is in one shard only).
	const limit = q.ahead === undefined ? undefined : "?7";
	const ahead = `${LEVELS_AHEAD} + ${tiesAheadSql(limit)}`;
	const rank = await rankAcrossShards(pool, async (db) => {
		const row = await db
			.prepare(`SELECT ${ahead} AS ahead FROM (SELECT ?4 AS userkey, ?5 AS friends, ?6 AS reached_at) m`)
			.bind(q.appid, q.campaignid, q.bucket, q.userkey, mine.friends, mine.reached_at, ...(q.ahead === undefined ? [] : [q.ahead]))
			.all();
		return Number(firstRowOf<{ ahead: number }>(row)?.ahead ?? 0);
	});
	// A bounded standing (`ahead`) reads at most `ahead` per shard; past it, the rank reads as `ahead + 1`, as on one database.
	return { userid: user.userid, erased: user.erased === 1, rank: q.ahead === undefined ? rank : Math.min(rank, q.ahead + 1), friends };
}
