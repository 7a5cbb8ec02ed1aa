-- Issue 50 phase 2b-1: where an app's projection rows live (docs/scaling.md,
-- "Built in phase 2b"). 'one': in this database, as every app before this
-- migration; 'sharded': in the shard of each row's owner (migrations-shard/
-- 0002). Existing apps stay 'one' until the upgrade moves them (docs/scaling.md,
-- "Upgrade from one database"); an app created from now on is created
-- 'sharded' (src/db/apps.ts insertApp). Read with the app from auth's cache
-- and, by the projection consumer, per isolate for 30 s (src/db/app-layout.ts).
ALTER TABLE apps ADD COLUMN layout TEXT NOT NULL DEFAULT 'one' CHECK (layout IN ('one', 'sharded'));
