-- Leaderboards (issue 34, docs/rewards.md "Leaderboards"): maintained
-- counters, so reading a board is one indexed range read of the top rows and
-- never a scan of an app's users or rewards.
--
-- One row per (app, campaign, period bucket, referrer): `bucket` is 'all',
-- 'month:YYYY-MM' or 'week:YYYY-MM-DD' (the Monday starting the week), local
-- to the app's time zone when the reward was projected. `friends` counts the
-- distinct friends with a referrer reward in the bucket that is not Rejected
-- and not fully reversed; `earned` sums those rewards' worth after refunds;
-- `reached_at` is when `friends` last grew (the tie-break: who got there
-- first). The projection flush keeps them (src/db/leaderboard.ts).
CREATE TABLE leaderboard_counts (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  bucket TEXT NOT NULL,
  userkey TEXT NOT NULL,
  friends INTEGER NOT NULL DEFAULT 0,
  earned REAL NOT NULL DEFAULT 0,
  reached_at TEXT NOT NULL,
  PRIMARY KEY (appid, campaignid, bucket, userkey)
) WITHOUT ROWID;
-- The board in rank order: the top N is the first N entries of this index.
CREATE INDEX leaderboard_counts_rank ON leaderboard_counts(appid, campaignid, bucket, friends DESC, reached_at, userkey);

-- Whether a referrer has another live reward for the same friend in a
-- bucket (distinct friends): one seek per projected referrer reward.
CREATE INDEX rewards_referrer_friend ON rewards(appid, userkey, friend_userkey, campaignid, created_at)
  WHERE usertype = 'Referrer';
