import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { everyShard } from "../src/db/shards";
import { SHARD_HASH } from "../src/domain/shard";

// Runs before each test file: the same migrations `npm run migrate` applies (scripts/migrate.mjs), on that file's
// own storage: migrations/ to the control database DB, migrations-shard/ to each of the 4 shards, with the shard
// directory and each shard's identity recorded as the script records them.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const shards = everyShard(env);
await env.DB.prepare(
	"INSERT OR IGNORE INTO shard_directory (id, shard_count, hash, recorded_at) VALUES (1, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
)
	.bind(shards.length, SHARD_HASH)
	.run();
for (const [shard, db] of shards.entries()) {
	await applyD1Migrations(db, env.TEST_SHARD_MIGRATIONS);
	await db
		.prepare(
			"INSERT OR IGNORE INTO shard_identity (id, shard, shard_count, hash, recorded_at) VALUES (1, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
		)
		.bind(shard, shards.length, SHARD_HASH)
		.run();
}
