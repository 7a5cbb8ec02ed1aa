-- Counters the dashboard's analytics read, kept as things happen (register,
-- share-link clicks, conversions, the ledgers' projection flush), so a year
-- of stats is one indexed range read instead of a scan of every event.
-- `metric` is one of clicks, signups, referred_signups, conversions,
-- rewards_created (count), reward_amount and redeemed (both per `unit`).
CREATE TABLE stats_daily (
  appid TEXT NOT NULL,
  campaignid INTEGER NOT NULL,
  day TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (appid, day, campaignid, metric, unit)
) WITHOUT ROWID;

-- Converted friends per referrer and day, for "top referrers" over a range.
CREATE TABLE stats_referrer_daily (
  appid TEXT NOT NULL,
  day TEXT NOT NULL,
  referrer_userid INTEGER NOT NULL,
  campaignid INTEGER NOT NULL,
  conversions INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (appid, day, referrer_userid, campaignid)
) WITHOUT ROWID;

-- The review queue and the reward filters page by status, newest first.
CREATE INDEX rewards_app_status ON rewards(appid, rewardstatus, created_at DESC, rewarddtlid DESC);
CREATE INDEX rewards_user ON rewards(appid, userkey, created_at DESC);

-- Backfill from what is stored already (conversions are dated by the friend's last update).
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(created_at, 1, 10), 'signups', '', COUNT(*) FROM users GROUP BY 1, 2, 3;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(created_at, 1, 10), 'referred_signups', '', COUNT(*) FROM users
  WHERE referrer_userid IS NOT NULL GROUP BY 1, 2, 3;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(updated_at, 1, 10), 'conversions', '', COUNT(*) FROM users
  WHERE status = 'Converted' AND referrer_userid IS NOT NULL GROUP BY 1, 2, 3;
INSERT INTO stats_referrer_daily (appid, day, referrer_userid, campaignid, conversions)
  SELECT appid, substr(updated_at, 1, 10), referrer_userid, campaignid, COUNT(*) FROM users
  WHERE status = 'Converted' AND referrer_userid IS NOT NULL GROUP BY 1, 2, 3, 4;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT u.appid, u.campaignid, l.day, 'clicks', '', SUM(l.clicks) FROM link_clicks l JOIN users u ON u.referralcode = l.referralcode
  GROUP BY 1, 2, 3;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(created_at, 1, 10), 'rewards_created', '', COUNT(*) FROM rewards GROUP BY 1, 2, 3;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(created_at, 1, 10), 'reward_amount', rewardunit, SUM(reward) FROM rewards GROUP BY 1, 2, 3, 5;
INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
  SELECT appid, campaignid, substr(updated_at, 1, 10), 'redeemed', rewardunit, SUM(redeemed) FROM rewards
  WHERE redeemed > 0 GROUP BY 1, 2, 3, 5;
CREATE INDEX users_app ON users(appid, userid DESC);
