/**
 * What one shard says about itself (issue 50): its identity row and the
 * shard migrations it applied, for the superuser's view of the pool
 * (admin/shards.ts) and the operator's check after `npm run migrate`. One
 * statement per shard; both tables are tiny (one row; one row per shard
 * migration).
 */
export interface ShardStatusRow {
	/** shard_identity: which shard of how many this database says it is (null before `npm run migrate` wrote it). */
	shard: number | null;
	shard_count: number | null;
	hash: string | null;
	/** Shard migrations applied (d1_migrations) and the newest one's name. */
	migrations: number;
	last_migration: string | null;
}

export async function readShardStatus(db: D1Database): Promise<ShardStatusRow> {
	const row = await db
		.prepare(
			`SELECT (SELECT shard FROM shard_identity WHERE id = 1) AS shard,
			        (SELECT shard_count FROM shard_identity WHERE id = 1) AS shard_count,
			        (SELECT hash FROM shard_identity WHERE id = 1) AS hash,
			        (SELECT COUNT(*) FROM d1_migrations) AS migrations,
			        (SELECT name FROM d1_migrations ORDER BY id DESC LIMIT 1) AS last_migration`,
		)
		.first<ShardStatusRow>();
	return row ?? { shard: null, shard_count: null, hash: null, migrations: 0, last_migration: null };
}
