import {
	afterCursor,
	type CounterKeys,
	type Direction,
	type MergedPage,
	mergePage,
	mergeTop,
	rankFromAhead,
	type ShardAfter,
	type ShardPosition,
	type SortKey,
	sumCounters,
} from "../domain/shard-merge";
import { namedD1Error } from "../instrument/d1-availability";
import type { ShardPool } from "./shards";

/**
 * One question asked of every shard, the answers merged (issue 50,
 * docs/scaling.md "Admin views across shards"): the admin views' lists,
 * stats, boards and exports once their rows live in the shards. The shards
 * are asked in parallel, so a fan-out costs about the slowest shard's round
 * trip, not their sum. Each caller supplies its own statement per shard (a
 * `src/db/` module with typed rows, indexed like any other: the query-plan
 * guard explains statements sent to shards against the shard schema); the
 * merge itself is pure (domain/shard-merge.ts).
 *
 * A view that needs every shard fails as a whole when one fails (503
 * `service_busy`, the failing shard named in the log): it never answers with
 * a shard's rows missing.
 */

/** `query` run on every shard of `pool` at once; the answers in shard order. The first failure fails the whole, named after its shard. */
export async function onEveryShard<T>(pool: ShardPool, query: (db: D1Database, shard: number) => Promise<T>): Promise<T[]> {
	return Promise.all(
		pool.shards.map(async (db, shard) => {
			try {
				return await query(db, shard);
			} catch (error) {
				throw namedD1Error(error, `SHARD_${shard}`);
			}
		}),
	);
}

/** What a keyset list asks each shard: its first `take` rows in the list's order, after `after` (null: from the start). */
export type ShardPageRead<Row> = (db: D1Database, after: ShardAfter | null, take: number, shard: number) => Promise<Row[]>;

/**
 * One page of a list across every shard: each shard's first `limit + 1` rows
 * after the cursor, merged by (ordering key, shard) in `direction`; `next` is
 * the position to pass back for the following page (encodeShardCursor makes
 * it opaque), null on the last page. `keyOf` must give the key the shard's
 * `ORDER BY` sorts by, unique within a shard.
 */
export async function pageAcrossShards<Row>(
	pool: ShardPool,
	list: { cursor: ShardPosition | null; limit: number; direction: Direction; keyOf: (row: Row) => SortKey; read: ShardPageRead<Row> },
): Promise<MergedPage<Row>> {
	const perShard = await onEveryShard(pool, (db, shard) =>
		list.read(db, afterCursor(list.cursor, shard, list.direction), list.limit + 1, shard),
	);
	return mergePage(perShard, list.limit, list.keyOf, list.direction);
}

/** Counter rows read from every shard and summed by `keyOf` (stats slots, totals): see sumCounters. */
export async function sumAcrossShards<Row extends object>(
	pool: ShardPool,
	read: (db: D1Database, shard: number) => Promise<Row[]>,
	keyOf: (row: Row) => string,
	counters: readonly CounterKeys<Row>[],
): Promise<Row[]> {
	return sumCounters(await onEveryShard(pool, read), keyOf, counters);
}

/** A board's first `n` over every shard: each shard's own top `n` (`read`), merged by `compare` (shard order on a full tie). */
export async function topAcrossShards<Row>(
	pool: ShardPool,
	n: number,
	read: (db: D1Database, n: number, shard: number) => Promise<Row[]>,
	compare: (a: Row, b: Row) => number,
): Promise<Row[]> {
	return mergeTop(await onEveryShard(pool, (db, shard) => read(db, n, shard)), n, compare);
}

/** A rank over every shard: 1 + what each shard counts ahead (`countAhead`, the board's order with the shard tie-break). */
export async function rankAcrossShards(pool: ShardPool, countAhead: (db: D1Database, shard: number) => Promise<number>): Promise<number> {
	return rankFromAhead(await onEveryShard(pool, countAhead));
}
