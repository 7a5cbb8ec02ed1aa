-- Issue 49, the (app, customid) gate of conversion events moves to the
-- EventGate Durable Objects (src/ledger/event-gate.ts). Events recorded before
-- exist only here in D1: an app that has any is marked, and a gate miss for
-- such an app reads conversion_events once (then keeps what it found). Every
-- app without events now, and every app created from now on, has its events
-- in the gates alone, so a miss is the answer and costs no D1 read.
-- Clearing the mark once its events are copied into the gates (a backfill)
-- is left to a later step (docs/scaling.md, "Conversions without D1").
ALTER TABLE apps ADD COLUMN legacy_events INTEGER NOT NULL DEFAULT 0;
UPDATE apps SET legacy_events = 1 WHERE EXISTS (SELECT 1 FROM conversion_events e WHERE e.appid = apps.appid);
