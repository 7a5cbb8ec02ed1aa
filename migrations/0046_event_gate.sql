-- Issue 49, the (app, customid) gate of conversion events moves to the
-- EventGate Durable Objects (src/ledger/event-gate.ts). Events recorded before
-- exist only here in D1: an app that has any is marked, and a gate miss for
-- such an app reads conversion_events once (then keeps what it found). Every
-- app without events now, and every app created from now on, has its events
-- in the gates alone, so a miss is the answer and costs no D1 read.
-- The backfill (operations/event-gate-backfill.ts, every minute) copies a
-- marked app's events into their gates in pages of its (appid, customid) key,
-- `legacy_cursor` the last customid copied, and clears the mark when done.
ALTER TABLE apps ADD COLUMN legacy_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN legacy_cursor TEXT;
UPDATE apps SET legacy_events = 1 WHERE EXISTS (SELECT 1 FROM conversion_events e WHERE e.appid = apps.appid);
-- The few marked apps, found by the backfill without reading every app.
CREATE INDEX apps_legacy_events ON apps(appid) WHERE legacy_events = 1;
