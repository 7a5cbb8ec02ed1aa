-- Issue 33, rows written per conversion: users_conversion (conversion_id),
-- migration 0010, found the friend that a conversion's batch had just moved
-- to Converted by the batch's token, for the referrer's count and the stats
-- (src/db/events.ts, src/db/stats.ts conversionCounters). Those statements
-- now find the friend by its event's (app, customid) key, a seek of
-- conversion_events' unique index then of users' primary key, and check the
-- token on that one row: the index answered nothing else, and each
-- converting friend wrote an entry in it (one row of each first-reward and
-- hot-referrer conversion). Dropping an index rewrites no table.
DROP INDEX users_conversion;
