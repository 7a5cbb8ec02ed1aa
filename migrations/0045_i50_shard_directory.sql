-- Issue 50: the shard directory of the control database (docs/scaling.md
-- "Past one database"). One row: how many D1 shards the deployment routes to
-- and by which hash (src/domain/shard.ts SHARD_HASH). Written once by
-- `npm run migrate` (scripts/migrate.mjs) on its first run; every later run,
-- and so every deploy, refuses a wrangler.toml whose shard count differs,
-- since a new count or hash would send every key to another shard.
CREATE TABLE shard_directory (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  shard_count INTEGER NOT NULL CHECK (shard_count > 0),
  hash TEXT NOT NULL,
  recorded_at TEXT NOT NULL
);
