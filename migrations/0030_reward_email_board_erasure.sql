-- Issue 34, leaderboards: an erased user's counters are deleted at the
-- erasure (src/db/privacy.ts), so a user's rank counts the rows ahead of it
-- on leaderboard_counts_rank alone, without reading each one's user. This
-- index finds a user's counters for that delete; the statement below removes
-- those of users erased before this migration.
CREATE INDEX leaderboard_counts_user ON leaderboard_counts(appid, userkey);
DELETE FROM leaderboard_counts WHERE EXISTS (
  SELECT 1 FROM users u WHERE u.userkey = leaderboard_counts.userkey AND u.appid = leaderboard_counts.appid AND u.erased_at IS NOT NULL
);

-- Issue 34, the reward-earned email (docs/messages.md): a campaign's setting
-- ('auto': sent when the app set an email sender; 'on'; 'off') and a third
-- kind of editable message. SQLite cannot change a CHECK in place: the table
-- of campaign texts is made again with 'reward' allowed, its rows copied.
ALTER TABLE campaigns ADD COLUMN rewardemail TEXT NOT NULL DEFAULT 'auto' CHECK (rewardemail IN ('auto', 'on', 'off'));

CREATE TABLE campaign_messages_0030 (
  campaignid INTEGER NOT NULL REFERENCES campaigns(campaignid),
  kind TEXT NOT NULL CHECK (kind IN ('outreach', 'reminder', 'reward')),
  language TEXT NOT NULL CHECK (language IN ('en', 'fr', 'de', 'es')),
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (campaignid, kind, language)
) WITHOUT ROWID;
INSERT INTO campaign_messages_0030 (campaignid, kind, language, subject, body, updated_at)
  SELECT campaignid, kind, language, subject, body, updated_at FROM campaign_messages;
DROP TABLE campaign_messages;
ALTER TABLE campaign_messages_0030 RENAME TO campaign_messages;
