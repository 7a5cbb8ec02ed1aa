import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { onEveryShard, pageAcrossShards, rankAcrossShards, sumAcrossShards, topAcrossShards } from "../../src/db/fanout";
import { shardPool } from "../../src/db/shards";
import { compareValues, decodeShardCursor, encodeShardCursor, type ShardAfter, type ShardPosition } from "../../src/domain/shard-merge";
import { D1UnavailableError, isD1Unavailable } from "../../src/instrument/d1-availability";
import { withBindings } from "../../src/instrument/d1-metrics";
import { d1DownFrom } from "../http/d1-down";

// Issue 50: one statement on every one of the 4 local shards, the answers
// merged (src/db/fanout.ts). Rows are spread by shardFor of their (app,
// userkey), as phase 2b's tables will be; their ordering keys repeat across
// shards (the shard breaks the tie) and hold text whose JavaScript order is
// not SQLite's. The expected answers come from ONE SQLite database holding
// every row (a scratch table on SHARD_0 with each row's shard), ordered by
// SQL: a one-database run of the same question.

const APP = `app_fanout_${crypto.randomUUID().slice(0, 8)}`;
const BUCKETS = ["a", "b", "é", "\uff01", "😀", "a😀", "a\uff01", "2026-11-29T10:00:00.000Z"];
const USERS = 240;

type Row = { bucket: string; n: number; userkey: string };

/** One shard's page of the list: its first `take` rows in (bucket, n) `direction` order after `after`, by its primary key. */
function reader(direction: "asc" | "desc") {
	const [op, strict, order] = direction === "asc" ? [">=", ">", "ASC"] : ["<=", "<", "DESC"];
	return async (db: D1Database, after: ShardAfter | null, take: number): Promise<Row[]> => {
		const where = after ? `AND (bucket, n) ${after.inclusive ? op : strict} (?, ?)` : "";
		const statement = db.prepare(
			`SELECT bucket, n, userkey FROM test_fanout_rows WHERE appid = ? ${where} ORDER BY bucket ${order}, n ${order} LIMIT ?`,
		);
		const bound = after ? statement.bind(APP, after.key[0], after.key[1], take) : statement.bind(APP, take);
		return (await bound.all<Row>()).results;
	};
}

beforeAll(async () => {
	const pool = await shardPool(env);
	await onEveryShard(pool, (db) =>
		db.batch([
			db.prepare(
				"CREATE TABLE IF NOT EXISTS test_fanout_rows (appid TEXT, bucket TEXT, n INTEGER, userkey TEXT, PRIMARY KEY (appid, bucket, n))",
			),
			db.prepare(
				"CREATE TABLE IF NOT EXISTS test_fanout_board (appid TEXT, userkey TEXT, friends INTEGER, reached_at TEXT, PRIMARY KEY (appid, userkey))",
			),
			db.prepare("CREATE TABLE IF NOT EXISTS test_fanout_counts (appid TEXT, day TEXT, signups INTEGER, PRIMARY KEY (appid, day))"),
		]),
	);
	await pool.shards[0]
		?.prepare(
			"CREATE TABLE IF NOT EXISTS test_fanout_all (appid TEXT, bucket TEXT, n INTEGER, shard INTEGER, userkey TEXT, friends INTEGER, reached_at TEXT)",
		)
		.run();
	// Each user to its home shard; n counts per shard and bucket, so (bucket, n) is unique in a shard and repeats across them.
	const next = new Map<string, number>();
	const perShard: D1PreparedStatement[][] = pool.shards.map(() => []);
	const all: D1PreparedStatement[] = [];
	for (let i = 0; i < USERS; i++) {
		const userkey = `user-${i}`;
		const shard = pool.numberFor(APP, userkey);
		const db = pool.for(APP, userkey);
		const bucket = BUCKETS[(i * 7) % BUCKETS.length] ?? "a";
		const n = (next.get(`${shard}/${bucket}`) ?? 0) + 1;
		next.set(`${shard}/${bucket}`, n);
		const friends = i % 6;
		const reachedAt = `2026-11-${String(10 + (i % 3)).padStart(2, "0")}`;
		perShard[shard]?.push(
			db.prepare("INSERT INTO test_fanout_rows VALUES (?, ?, ?, ?)").bind(APP, bucket, n, userkey),
			db.prepare("INSERT INTO test_fanout_board VALUES (?, ?, ?, ?)").bind(APP, userkey, friends, reachedAt),
			db
				.prepare("INSERT INTO test_fanout_counts VALUES (?, ?, 1) ON CONFLICT (appid, day) DO UPDATE SET signups = signups + 1")
				.bind(APP, reachedAt),
		);
		all.push(
			(pool.shards[0] as D1Database)
				.prepare("INSERT INTO test_fanout_all VALUES (?, ?, ?, ?, ?, ?, ?)")
				.bind(APP, bucket, n, shard, userkey, friends, reachedAt),
		);
	}
	await Promise.all(pool.shards.map((db, shard) => db.batch(perShard[shard] ?? [])));
	await pool.shards[0]?.batch(all);
	// Spread by the hash: every shard holds some.
	expect(perShard.map((s) => s.length > 0)).toEqual([true, true, true, true]);
});

/** The one-database answer: every row in (bucket, n, shard) order. */
async function oneDatabase(direction: "ASC" | "DESC"): Promise<string[]> {
	const { results } = await (env.SHARD_0 as D1Database)
		.prepare(`SELECT userkey FROM test_fanout_all WHERE appid = ? ORDER BY bucket ${direction}, n ${direction}, shard ${direction}`)
		.bind(APP)
		.all<{ userkey: string }>();
	return results.map((r) => r.userkey);
}

describe("fan-out over the 4 local shards", () => {
	for (const direction of ["asc", "desc"] as const) {
		it(`pages a list spread by shardFor: every row exactly once, in the one-database order (${direction})`, async () => {
			const pool = await shardPool(env);
			const expected = await oneDatabase(direction === "asc" ? "ASC" : "DESC");
			expect(expected).toHaveLength(USERS);
			for (const limit of [1, 7, 50, 500]) {
				const seen: string[] = [];
				let cursor: ShardPosition | null = null;
				for (let pages = 0; pages <= USERS; pages++) {
					const page = await pageAcrossShards(pool, {
						cursor,
						limit,
						direction,
						keyOf: (r: Row) => [r.bucket, r.n],
						read: reader(direction),
					});
					seen.push(...page.rows.map(({ row }) => row.userkey));
					if (!page.next) break;
					cursor = decodeShardCursor(encodeShardCursor(page.next), ["text", "integer"], pool.count);
				}
				expect(seen, `limit ${limit}`).toEqual(expected);
			}
		});
	}

	it("merges a board's top N and sums a user's rank over the shards as one database orders them", async () => {
		const pool = await shardPool(env);
		type Entry = { userkey: string; friends: number; reached_at: string };
		const board = (a: Entry, b: Entry) => b.friends - a.friends || compareValues(a.reached_at, b.reached_at);
		const top = await topAcrossShards(
			pool,
			10,
			async (db, n) =>
				(
					await db
						.prepare(
							"SELECT userkey, friends, reached_at FROM test_fanout_board WHERE appid = ? ORDER BY friends DESC, reached_at ASC, userkey ASC LIMIT ?",
						)
						.bind(APP, n)
						.all<Entry>()
				).results,
			board,
		);
		const { results } = await (env.SHARD_0 as D1Database)
			.prepare("SELECT userkey, shard FROM test_fanout_all WHERE appid = ? ORDER BY friends DESC, reached_at ASC, shard ASC, userkey ASC")
			.bind(APP)
			.all<{ userkey: string; shard: number }>();
		// A full tie of the board's order: the earlier shard first, then the shard's own order (its statement's ORDER BY).
		expect(top.map((e) => e.userkey)).toEqual(results.slice(0, 10).map((r) => r.userkey));
		// A user's rank: 1 + in each shard the rows with more friends, or as many reached earlier, or a full tie in an earlier
		// shard; in its own shard as today's rank counts (a full tie before it by userkey).
		for (const userkey of ["user-7", "user-100", "user-239"]) {
			const mine = results.findIndex((r) => r.userkey === userkey);
			const me = results[mine];
			const entry = await pool
				.for(APP, userkey)
				.prepare("SELECT friends, reached_at FROM test_fanout_board WHERE appid = ? AND userkey = ?")
				.bind(APP, userkey)
				.first<{ friends: number; reached_at: string }>();
			const rank = await rankAcrossShards(pool, async (db, shard) => {
				const tie = shard < (me?.shard ?? 0) ? "?4 IS NOT NULL" : shard === me?.shard ? "userkey < ?4" : "?4 IS NULL";
				const row = await db
					.prepare(
						`SELECT COUNT(*) AS ahead FROM test_fanout_board WHERE appid = ?1 AND (friends > ?2 OR (friends = ?2 AND (reached_at < ?3 OR (reached_at = ?3 AND ${tie}))))`,
					)
					.bind(APP, entry?.friends, entry?.reached_at, userkey)
					.first<{ ahead: number }>();
				return row?.ahead ?? 0;
			});
			expect(rank, userkey).toBe(mine + 1);
		}
	});

	it("sums each shard's partial counters into the one-database count", async () => {
		const pool = await shardPool(env);
		type Count = { day: string; signups: number };
		const summed = await sumAcrossShards<Count>(
			pool,
			async (db) =>
				(await db.prepare("SELECT day, signups FROM test_fanout_counts WHERE appid = ? ORDER BY day").bind(APP).all<Count>()).results,
			(c) => c.day,
			["signups"],
		);
		const { results } = await (env.SHARD_0 as D1Database)
			.prepare("SELECT reached_at AS day, COUNT(*) AS signups FROM test_fanout_all WHERE appid = ? GROUP BY reached_at ORDER BY day")
			.bind(APP)
			.all<Count>();
		expect([...summed].sort((a, b) => compareValues(a.day, b.day))).toEqual(results);
		expect(summed.reduce((n, c) => n + c.signups, 0)).toBe(USERS);
	});

	it("fails as a whole, naming the shard, when one shard is down: never a page with a shard's rows missing", async () => {
		const down = d1DownFrom(env.SHARD_2 as D1Database, 1);
		const pool = await shardPool(withBindings(env, { SHARD_2: down.db }));
		const failed = await pageAcrossShards(pool, {
			cursor: null,
			limit: 10,
			direction: "asc",
			keyOf: (r: Row) => [r.bucket, r.n],
			read: reader("asc"),
		}).catch((error: unknown) => error);
		expect(failed).toBeInstanceOf(D1UnavailableError);
		expect(isD1Unavailable(failed)).toBe(true);
		expect(failed instanceof D1UnavailableError && failed.database).toBe("SHARD_2");
		expect(down.fired).toBe(true);
	});
});
