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

-- Issue 34, leaderboards: how many referrers of a board stand at each count
-- of friends, kept by triggers on leaderboard_counts (every write to it, the
-- flush's upserts, an erasure's delete, test data's, moves it in the same
-- statement). A user's rank sums the levels above its count (one row per
-- distinct count: a few dozen) and counts only its ties that reached the
-- count first, instead of every row ranked ahead (src/db/leaderboard.ts).
CREATE TABLE leaderboard_levels (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  friends INTEGER NOT NULL,
  referrers INTEGER NOT NULL,
  PRIMARY KEY (appid, campaignid, bucket, friends)
) WITHOUT ROWID;
INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers)
  SELECT appid, campaignid, bucket, friends, COUNT(*) FROM leaderboard_counts WHERE friends > 0 GROUP BY appid, campaignid, bucket, friends;
CREATE TRIGGER leaderboard_levels_insert AFTER INSERT ON leaderboard_counts WHEN NEW.friends > 0 BEGIN
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers) VALUES (NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1)
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
END;
CREATE TRIGGER leaderboard_levels_delete AFTER DELETE ON leaderboard_counts WHEN OLD.friends > 0 BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
END;
CREATE TRIGGER leaderboard_levels_update AFTER UPDATE OF friends ON leaderboard_counts WHEN OLD.friends <> NEW.friends BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE OLD.friends > 0 AND appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1 WHERE NEW.friends > 0
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
END;

-- Issue 34: a user's language as the product last gave it (`language` of
-- invokeoutreach for the user, of remindfriend for the friend), so the emails
-- the service sends on its own (the reward-earned email) are in it too.
ALTER TABLE users ADD COLUMN language TEXT;
