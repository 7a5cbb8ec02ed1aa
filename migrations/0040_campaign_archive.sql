-- Issue 48: a campaign can be archived (no new conversions or rewards; its
-- rewards and history stay; hidden from the console's pickers; restorable)
-- and deleted while nothing references it (docs/operators.md, "Building a
-- campaign"). archived_at is when it was archived; NULL: active.
ALTER TABLE campaigns ADD COLUMN archived_at TEXT;

-- Deleting checks that nothing references the campaign: one seek each in
-- users, conversion_events and rewards (campaignid leads none of their
-- indexes). A test twin's users and rewards carry the live campaign's id
-- (docs/test-mode.md), so the checks need no appid.
CREATE INDEX users_campaign ON users(campaignid);
CREATE INDEX conversion_events_campaign ON conversion_events(campaignid) WHERE campaignid IS NOT NULL;
CREATE INDEX rewards_campaign ON rewards(campaignid);
