-- Apps (tenants) and their credentials. The private key is stored only as a
-- SHA-256 hash: it is a 256-bit random secret, so a fast hash is enough.
CREATE TABLE apps (
  appid TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  apikey TEXT NOT NULL UNIQUE,
  privatekey_hash TEXT NOT NULL,
  webhook_secret TEXT NOT NULL,
  landingurl TEXT,
  webhookurl TEXT,
  emailsender TEXT,
  default_campaignid INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE campaigns (
  campaignid INTEGER PRIMARY KEY AUTOINCREMENT,
  appid TEXT NOT NULL REFERENCES apps(appid),
  campaignname TEXT NOT NULL,
  offertitle TEXT NOT NULL DEFAULT '',
  offerdescription TEXT NOT NULL DEFAULT '',
  campaignbgcolor TEXT NOT NULL DEFAULT '#ffffff',
  campaignstartdate TEXT NOT NULL,
  widgetfont TEXT NOT NULL DEFAULT '',
  customdomain TEXT NOT NULL DEFAULT '',
  rewardtype INTEGER NOT NULL DEFAULT 3,
  terms TEXT NOT NULL DEFAULT '',
  distribution TEXT NOT NULL DEFAULT 'InstoreCredits',
  holddays INTEGER NOT NULL DEFAULT 0,
  autoapprove INTEGER NOT NULL DEFAULT 1,
  growthhack TEXT NOT NULL DEFAULT 'SaaS_Referrals',
  -- Unit of rewards computed as a percent of a transaction value.
  currency TEXT NOT NULL DEFAULT 'USD',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX campaigns_app ON campaigns(appid, campaignid);

CREATE TABLE reward_rules (
  ruleid INTEGER PRIMARY KEY AUTOINCREMENT,
  campaignid INTEGER NOT NULL REFERENCES campaigns(campaignid),
  position INTEGER NOT NULL,
  rewardusertype TEXT NOT NULL,
  eventname TEXT NOT NULL,
  reward REAL NOT NULL,
  rewardunit TEXT NOT NULL,
  rewardfrequency INTEGER NOT NULL DEFAULT 0,
  mintranvalue REAL NOT NULL DEFAULT 0,
  maxrewardamount REAL NOT NULL DEFAULT 0,
  categories TEXT,
  inclusionsandexclusions TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX reward_rules_campaign ON reward_rules(campaignid, position);

CREATE TABLE social_actions (
  campaignsocialactionid INTEGER PRIMARY KEY AUTOINCREMENT,
  campaignid INTEGER NOT NULL REFERENCES campaigns(campaignid),
  socialactionid TEXT NOT NULL,
  socialactionname TEXT NOT NULL,
  sharemessage TEXT NOT NULL DEFAULT '',
  sharetitle TEXT NOT NULL DEFAULT '',
  shareimageurl TEXT NOT NULL DEFAULT '',
  displayorder INTEGER NOT NULL DEFAULT 0,
  sharemessagetype INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX social_actions_campaign ON social_actions(campaignid, displayorder);

-- Coupon pool. A code is handed to at most one reward: `reward_key` is the
-- ledger's idempotency key of that reward, so a retried grant gets the same code.
CREATE TABLE coupons (
  couponid INTEGER PRIMARY KEY AUTOINCREMENT,
  campaignid INTEGER NOT NULL REFERENCES campaigns(campaignid),
  coupon TEXT NOT NULL,
  couponname TEXT NOT NULL DEFAULT '',
  coupondetails TEXT NOT NULL DEFAULT '',
  couponimage TEXT NOT NULL DEFAULT '',
  reward_key TEXT UNIQUE,
  assigned_at TEXT,
  UNIQUE (campaignid, coupon)
);
CREATE INDEX coupons_free ON coupons(campaignid, couponid) WHERE reward_key IS NULL;

-- Users of an app. `referralcode` is unique across apps because share links
-- (/r/<code>) carry no app.
CREATE TABLE users (
  userid INTEGER PRIMARY KEY AUTOINCREMENT,
  appid TEXT NOT NULL REFERENCES apps(appid),
  userkey TEXT NOT NULL UNIQUE,
  referralcode TEXT NOT NULL UNIQUE,
  campaignid INTEGER NOT NULL,
  email TEXT,
  useraccountid TEXT,
  name TEXT,
  phone TEXT,
  profileimage TEXT,
  city TEXT,
  state TEXT,
  country TEXT,
  paymentcustomerid TEXT,
  usertimezone TEXT,
  extrainfo TEXT,
  isexistinguser INTEGER NOT NULL DEFAULT 0,
  referrer_userid INTEGER REFERENCES users(userid),
  attributed_at TEXT,
  -- Random id of the call that set the referrer: statements batched after the
  -- guarded UPDATE fire only when that call's UPDATE took effect.
  attribution_id TEXT,
  -- Random id of the event call that moved the friend to Converted (same idea).
  conversion_id TEXT,
  status TEXT NOT NULL DEFAULT 'SignUp',
  friends_count INTEGER NOT NULL DEFAULT 0,
  converted_friends_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX users_app_email ON users(appid, email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_app_account ON users(appid, useraccountid) WHERE useraccountid IS NOT NULL;
CREATE INDEX users_referrer ON users(referrer_userid, userid DESC) WHERE referrer_userid IS NOT NULL;

-- Share-link clicks, one counter per code and UTC day.
CREATE TABLE link_clicks (
  referralcode TEXT NOT NULL,
  day TEXT NOT NULL,
  clicks INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (referralcode, day)
) WITHOUT ROWID;

-- Conversion events: the (app, customid) gate that makes a retry a no-op.
CREATE TABLE conversion_events (
  eventid INTEGER PRIMARY KEY AUTOINCREMENT,
  appid TEXT NOT NULL,
  customid TEXT NOT NULL,
  userid INTEGER NOT NULL REFERENCES users(userid),
  eventname TEXT NOT NULL,
  transactionvalue REAL,
  extrainfo TEXT,
  campaignid INTEGER,
  growthhack TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (appid, customid)
);

-- Read projection of every ledger's rewards, for admin queries. The
-- UserLedger objects are the source of truth and write this through their outbox.
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
  version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX rewards_app ON rewards(appid, created_at DESC);

-- Webhook/email outbox: events recorded with the change that caused them,
-- then handed to the queue. `eventid` is the stable webhook-id.
CREATE TABLE outbox_events (
  eventid TEXT PRIMARY KEY,
  appid TEXT NOT NULL,
  kind TEXT NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  enqueued_at TEXT,
  delivered_at TEXT
);
CREATE INDEX outbox_pending ON outbox_events(created_at) WHERE enqueued_at IS NULL;
CREATE INDEX outbox_app ON outbox_events(appid, created_at DESC);

-- One row per delivery attempt of an outbox event.
CREATE TABLE delivery_attempts (
  attemptid INTEGER PRIMARY KEY AUTOINCREMENT,
  eventid TEXT NOT NULL REFERENCES outbox_events(eventid),
  attempt INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  response_code INTEGER,
  duration_ms INTEGER NOT NULL,
  error TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX delivery_attempts_event ON delivery_attempts(eventid, attemptid);
