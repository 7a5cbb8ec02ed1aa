-- Issue 20: the server completes recorded conversions. An event is recorded
-- with grants_pending = 1 in the batch that inserts it; the ledger that
-- announces it (conversion.recorded) clears the mark in its outbox flush, once
-- every grant of the event was confirmed. A scheduled pass completes the
-- events still marked a minute later (operations/conversion-completion.ts).
-- Rows from before stay NULL (complete), so nothing is backfilled, and the
-- partial index holds only events in flight.
ALTER TABLE conversion_events ADD COLUMN grants_pending INTEGER;
CREATE INDEX conversion_events_grants_pending ON conversion_events(created_at) WHERE grants_pending IS NOT NULL;
