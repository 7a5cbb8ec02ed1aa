-- Issue 48: a campaign can be archived (no new conversions or rewards; its
-- rewards and history stay; hidden from the console's pickers; restorable)
-- and deleted while nothing references it (docs/operators.md, "Building a
-- campaign"). archived_at is when it was archived; NULL: active.
ALTER TABLE campaigns ADD COLUMN archived_at TEXT;

-- Deleting checks that nothing references the campaign: one seek each in
-- users and rewards (campaignid leads none of their indexes). A test twin's
-- users and rewards carry the live campaign's id (docs/test-mode.md), so the
-- checks need no appid. conversion_events gets no such index: it would add a
-- row written to every conversion (issue 33 counts them) for a rare admin
-- call; an event that earned a reward is found through the reward, one
-- whose rewards are not confirmed yet through conversion_events_grants_pending.
CREATE INDEX users_campaign ON users(campaignid);
CREATE INDEX rewards_campaign ON rewards(campaignid);
