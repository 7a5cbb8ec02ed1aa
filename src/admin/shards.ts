import { Hono } from "hono";
import { onEveryShard } from "../db/fanout";
import { readShardStatus, type ShardStatusRow } from "../db/shard-status";
import { shardPool } from "../db/shards";
import { SHARD_HASH, shardBinding } from "../domain/shard";
import { ApiError } from "../http/errors";
import type { AdminEnv } from "./principal";

/**
 * The shard pool as the Worker sees it (issue 50; superuser only,
 * admin/rights.ts): the count and hash it routes by (after its check of the
 * shard directory, db/shards.ts), and what each shard says about itself: its
 * identity and its schema version. For the operator after a deploy or
 * `npm run migrate`, and for the upgrade's checks.
 *
 * `GET /shards` asks every shard at once and, like every view that needs
 * every shard, answers 503 `service_busy` when one fails (the log names it);
 * `GET /shards/{shard}` asks only that shard, so a failing shard fails only
 * the requests that need it.
 */
export const shardRoutes = new Hono<AdminEnv>();

function shardView(shard: number, count: number, row: ShardStatusRow) {
	return {
		shard,
		binding: shardBinding(shard),
		// A binding pointed at another shard's database says so here (npm run migrate refuses it too).
		identityok: row.shard === shard && row.shard_count === count && row.hash === SHARD_HASH,
		identity: row.shard === null ? null : { shard: row.shard, shardcount: row.shard_count, hash: row.hash },
		migrations: row.migrations,
		lastmigration: row.last_migration,
	};
}

shardRoutes.get("/shards", async (c) => {
	const pool = await shardPool(c.env);
	const rows = await onEveryShard(pool, (db) => readShardStatus(db));
	return c.json({ shardcount: pool.count, hash: SHARD_HASH, shards: rows.map((row, shard) => shardView(shard, pool.count, row)) });
});

shardRoutes.get("/shards/:shard", async (c) => {
	const pool = await shardPool(c.env);
	const param = c.req.param("shard");
	const shard = /^\d{1,4}$/.test(param) ? Number(param) : Number.NaN;
	const db = pool.shards[shard];
	if (!db) throw new ApiError(404, "not_found", `No shard ${param}: the pool has ${pool.count} (0 to ${pool.count - 1}).`);
	return c.json({ shardcount: pool.count, hash: SHARD_HASH, ...shardView(shard, pool.count, await readShardStatus(db)) });
});
