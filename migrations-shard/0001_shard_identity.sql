-- Issue 50: the first shard migration (migrations-shard/ is applied to every
-- SHARD_<n> database by `npm run migrate`; migrations/ to the control
-- database DB). One row: which shard of how many this database is, written by
-- scripts/migrate.mjs after its migrations. A later run refuses a database
-- that says it is another shard (a binding pointed at the wrong database
-- would route keys to rows that are not theirs). The tables that move here
-- from the control database come in later migrations (expand/contract,
-- docs/deploy.md).
CREATE TABLE shard_identity (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  shard INTEGER NOT NULL CHECK (shard >= 0),
  shard_count INTEGER NOT NULL CHECK (shard_count > shard),
  hash TEXT NOT NULL,
  recorded_at TEXT NOT NULL
);
