-- The completion pass (src/operations/conversion-completion.ts) takes at most
-- 50 events whose grants were never confirmed. It took the oldest first, so 50
-- events that failed in every pass (a ledger that keeps throwing) would have
-- been tried again each minute forever, ahead of every newer event, which then
-- never completed. grants_pending now counts the passes an event failed in
-- (1 when recorded, one more per failed pass), and the pass takes the fewest
-- failures first, then the oldest: an event that keeps failing sinks behind
-- the others and is still tried when a pass has room.
DROP INDEX conversion_events_grants_pending;
CREATE INDEX conversion_events_grants_pending ON conversion_events(grants_pending, created_at) WHERE grants_pending IS NOT NULL;
