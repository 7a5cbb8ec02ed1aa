-- Issue 50 phase 2b-1: the projection's tables on every shard (docs/scaling.md,
-- "Built in phase 2b"). What the projection consumer writes for an app whose
-- layout is 'sharded' (migrations/0049): each row in the shard of its owner's
-- (appid, userkey) (src/domain/shard.ts): a reward's projection in its owner's,
-- the stats counters a reward moves in the same shard, a referrer's board
-- counters (and the levels and tie slices its triggers keep) in the referrer's,
-- so one ledger flush writes one shard in one transaction, and the counters'
-- deltas are read from the previous projected row in that very transaction, as
-- on one database (src/db/projection-batch.ts). Columns and statements are the
-- control database's (migrations 0001-0047), so one SQL serves both layouts.
--
-- Slimmer than the control database's (issue 49: rows written per conversion
-- count): `rewards` is WITHOUT ROWID on its primary key, the reward id every
-- upsert and every counter statement seeks, so an insert writes no separate
-- rowid-to-key index entry. Each index below is one more row written per
-- reward insert (and per status change of a column it holds): each is here for
-- a read that needs it, named in its comment.
CREATE TABLE rewards (
  rewarddtlid TEXT PRIMARY KEY,
  appid TEXT NOT NULL,
  userkey TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  eventname TEXT NOT NULL,
  usertype TEXT NOT NULL,
  reward REAL NOT NULL,
  rewardunit TEXT NOT NULL,
  rewardtype TEXT NOT NULL,
  rewardstatus TEXT NOT NULL,
  redeemed REAL NOT NULL DEFAULT 0,
  comment TEXT,
  friend_userkey TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 0,
  fraudsignals TEXT NOT NULL DEFAULT '[]',
  payoutid TEXT,
  payout_state TEXT
) WITHOUT ROWID;
-- The admin's rewards list of every status (and its export), newest first, by keyset (created_at, rewarddtlid).
CREATE INDEX rewards_app ON rewards(appid, created_at DESC, rewarddtlid DESC);
-- Rewards by status and the review queue (Pending, Suspicious), newest first, by the same keyset.
CREATE INDEX rewards_app_status ON rewards(appid, rewardstatus, created_at DESC, rewarddtlid DESC);
-- One user's rewards (the admin's user page, privacy export and erasure), newest first.
CREATE INDEX rewards_user ON rewards(appid, userkey, created_at DESC);
-- The board counters' "another live reward of this referrer for this friend" (src/db/leaderboard.ts), referrer rewards only.
CREATE INDEX rewards_referrer_friend ON rewards(appid, userkey, friend_userkey, campaignid, created_at)
  WHERE usertype = 'Referrer';
-- Whether a campaign has rewards before it is deleted (src/db/campaign-archive.ts): one seek per shard.
CREATE INDEX rewards_campaign ON rewards(campaignid);
-- The payout redrive's open payouts (src/db/payout-redrive.ts): only rewards whose payout is in flight, a few.
CREATE INDEX rewards_payout_open ON rewards(updated_at) WHERE payout_state IN ('pending', 'due', 'sending', 'unknown');

-- The analytics counters a reward moves (rewards_created, reward_amount, redeemed: src/db/stats.ts), per UTC
-- quarter hour: this shard's part of the app's count, summed over the control database and every shard by the
-- reader. The counters of sign-ups, conversions and clicks stay in the control database's stats_slots: they are
-- written from its `users` rows, in the registration's, the conversion's and the click roll-up's own batches.
CREATE TABLE stats_slots (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  slot TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (appid, slot, campaignid, metric, unit)
) WITHOUT ROWID;

-- A referrer's board counters in its home shard (migration 0036's shape): the board's top N is each shard's top N
-- merged, a rank 1 + the sum over shards of the referrers ahead (src/db/leaderboard-shards.ts).
CREATE TABLE leaderboard_counts (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  userkey TEXT NOT NULL,
  friends INTEGER NOT NULL DEFAULT 0,
  earned REAL NOT NULL DEFAULT 0,
  reached_at TEXT NOT NULL,
  PRIMARY KEY (appid, userkey, campaignid, bucket)
) WITHOUT ROWID;
-- Each shard's top N of a bucket, and its ties counted on a level of fewer than 1,024 referrers.
CREATE INDEX leaderboard_counts_rank ON leaderboard_counts(appid, campaignid, bucket, friends DESC, reached_at, userkey);
-- The referrers of this shard per count (migration 0030's, kept by the triggers below): a rank's "more friends".
CREATE TABLE leaderboard_levels (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  friends INTEGER NOT NULL,
  referrers INTEGER NOT NULL,
  ties INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (appid, campaignid, bucket, friends)
) WITHOUT ROWID;
-- Tie slices of a level of 1,024 referrers or more in this shard (migrations 0033, 0035).
CREATE TABLE leaderboard_ties (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  friends INTEGER NOT NULL,
  width INTEGER NOT NULL,
  slice TEXT NOT NULL,
  referrers INTEGER NOT NULL,
  PRIMARY KEY (appid, campaignid, bucket, friends, width, slice)
) WITHOUT ROWID;
-- The six slice widths (migration 0033), fixed.
CREATE TABLE leaderboard_tie_widths (
  width INTEGER PRIMARY KEY,
  above INTEGER NOT NULL
);
INSERT INTO leaderboard_tie_widths (width, above) VALUES (4, 0), (7, 4), (10, 7), (13, 10), (16, 13), (19, 16);

-- Owners erased (src/db/privacy.ts): the control database's users.erased_at, told to the owner's shard in the
-- erasure, so a projection message that lands after it adds no board counter back (src/db/leaderboard.ts, the
-- guard the control database reads from `users`). One row per erased user of a sharded app.
CREATE TABLE erased_owners (
  appid TEXT NOT NULL,
  userkey TEXT NOT NULL,
  erased_at TEXT NOT NULL,
  PRIMARY KEY (appid, userkey)
) WITHOUT ROWID;

-- The levels and tie slices follow each counter (migrations 0035, 0036), as on the control database.
CREATE TRIGGER leaderboard_counts_insert AFTER INSERT ON leaderboard_counts WHEN NEW.friends > 0 BEGIN
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers) VALUES (NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1)
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket
      AND l.friends = NEW.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width), COUNT(*)
    FROM leaderboard_levels l CROSS JOIN leaderboard_counts c CROSS JOIN leaderboard_tie_widths w
    WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket AND l.friends = NEW.friends
      AND l.ties = 0 AND l.referrers >= 1024
      AND c.appid = l.appid AND c.campaignid = l.campaignid AND c.bucket = l.bucket AND c.friends = l.friends
    GROUP BY w.width, substr(c.reached_at, 1, w.width)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  UPDATE leaderboard_levels SET ties = 1
    WHERE appid = NEW.appid AND campaignid = NEW.campaignid AND bucket = NEW.bucket AND friends = NEW.friends AND ties = 0 AND referrers >= 1024;
END;
CREATE TRIGGER leaderboard_counts_delete AFTER DELETE ON leaderboard_counts WHEN OLD.friends > 0 BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = OLD.appid AND l.campaignid = OLD.campaignid AND l.bucket = OLD.bucket
      AND l.friends = OLD.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends
    AND width IN (SELECT width FROM leaderboard_tie_widths) AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths)
    AND referrers = 0;
END;
CREATE TRIGGER leaderboard_counts_update AFTER UPDATE OF friends, reached_at ON leaderboard_counts
  WHEN OLD.friends <> NEW.friends OR OLD.reached_at IS NOT NEW.reached_at BEGIN
  UPDATE leaderboard_levels SET referrers = referrers - 1
    WHERE OLD.friends <> NEW.friends AND OLD.friends > 0
      AND appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket AND friends = OLD.friends;
  INSERT INTO leaderboard_levels (appid, campaignid, bucket, friends, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, 1 WHERE OLD.friends <> NEW.friends AND NEW.friends > 0
    ON CONFLICT (appid, campaignid, bucket, friends) DO UPDATE SET referrers = referrers + 1;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT OLD.appid, OLD.campaignid, OLD.bucket, OLD.friends, w.width, substr(OLD.reached_at, 1, w.width), -1
    FROM leaderboard_tie_widths w
    WHERE OLD.friends > 0 AND EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = OLD.appid AND l.campaignid = OLD.campaignid
      AND l.bucket = OLD.bucket AND l.friends = OLD.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT NEW.appid, NEW.campaignid, NEW.bucket, NEW.friends, w.width, substr(NEW.reached_at, 1, w.width), 1
    FROM leaderboard_tie_widths w
    WHERE NEW.friends > 0 AND EXISTS (SELECT 1 FROM leaderboard_levels l WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid
      AND l.bucket = NEW.bucket AND l.friends = NEW.friends AND l.ties = 1)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  DELETE FROM leaderboard_ties WHERE OLD.friends > 0 AND appid = OLD.appid AND campaignid = OLD.campaignid AND bucket = OLD.bucket
    AND friends = OLD.friends AND width IN (SELECT width FROM leaderboard_tie_widths)
    AND slice IN (SELECT substr(OLD.reached_at, 1, width) FROM leaderboard_tie_widths) AND referrers = 0;
  INSERT INTO leaderboard_ties (appid, campaignid, bucket, friends, width, slice, referrers)
    SELECT c.appid, c.campaignid, c.bucket, c.friends, w.width, substr(c.reached_at, 1, w.width), COUNT(*)
    FROM leaderboard_levels l CROSS JOIN leaderboard_counts c CROSS JOIN leaderboard_tie_widths w
    WHERE l.appid = NEW.appid AND l.campaignid = NEW.campaignid AND l.bucket = NEW.bucket AND l.friends = NEW.friends
      AND NEW.friends > 0 AND l.ties = 0 AND l.referrers >= 1024
      AND c.appid = l.appid AND c.campaignid = l.campaignid AND c.bucket = l.bucket AND c.friends = l.friends
    GROUP BY w.width, substr(c.reached_at, 1, w.width)
    ON CONFLICT (appid, campaignid, bucket, friends, width, slice) DO UPDATE SET referrers = referrers + excluded.referrers;
  UPDATE leaderboard_levels SET ties = 1
    WHERE NEW.friends > 0 AND appid = NEW.appid AND campaignid = NEW.campaignid AND bucket = NEW.bucket AND friends = NEW.friends
      AND ties = 0 AND referrers >= 1024;
END;
