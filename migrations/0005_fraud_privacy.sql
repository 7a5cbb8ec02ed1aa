-- Issue 13: fraud signals, devices and networks, share-link click log, erasure.

-- Device ids and IP networks a product reported for its users (register,
-- updateuser, invokeoutreach). kind 'device': the device id as sent; kind
-- 'ip': hex HMAC-SHA256 of the address's network under the IP_HASH_KEY
-- secret (src/domain/ip.ts). No IP address is stored in clear anywhere.
CREATE TABLE user_identifiers (
  appid TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('device', 'ip')),
  value TEXT NOT NULL,
  userid INTEGER NOT NULL REFERENCES users(userid),
  created_at TEXT NOT NULL,
  PRIMARY KEY (appid, kind, value, userid)
) WITHOUT ROWID;
CREATE INDEX user_identifiers_user ON user_identifiers(userid, kind);

-- Last user agent the product sent for the user.
ALTER TABLE users ADD COLUMN useragent TEXT;
-- Set when the person's data was erased: the row stays (friends, events and
-- rewards point at it) without personal fields, and its referral code is dead.
ALTER TABLE users ADD COLUMN erased_at TEXT;

-- Per-campaign fraud settings: JSON array of the signal codes that make a
-- reward Suspicious (NULL: all of them; the others only flag it), and the
-- referred sign-ups per hour above which `velocity` fires (0 disables).
ALTER TABLE campaigns ADD COLUMN suspicioussignals TEXT;
ALTER TABLE campaigns ADD COLUMN velocitythreshold INTEGER NOT NULL DEFAULT 20;

-- Signal codes recorded on the reward (JSON array), copied from the ledger.
ALTER TABLE rewards ADD COLUMN fraudsignals TEXT NOT NULL DEFAULT '[]';

-- One row per share-link click, kept 30 days (src/scheduled.ts deletes older
-- ones); link_clicks keeps the daily counts for good.
CREATE TABLE link_click_log (
  clickid INTEGER PRIMARY KEY AUTOINCREMENT,
  referralcode TEXT NOT NULL,
  clicked_at TEXT NOT NULL,
  iphash TEXT,
  useragent TEXT
);
CREATE INDEX link_click_log_code ON link_click_log(referralcode, clickid);
CREATE INDEX link_click_log_time ON link_click_log(clicked_at);

-- Erase and export requests: who asked and when, never what was held.
CREATE TABLE privacy_log (
  logid INTEGER PRIMARY KEY AUTOINCREMENT,
  appid TEXT NOT NULL,
  userkey TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('erase', 'export')),
  actor TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX privacy_log_user ON privacy_log(appid, userkey, logid);
