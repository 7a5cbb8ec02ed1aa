/**
 * The ledger schema at its newest version, as ONE script: what a new
 * UserLedger runs, in one `exec` inside one transaction, instead of every
 * step of LEDGER_MIGRATIONS one transaction at a time (a user's first reward
 * creates its ledger, on the conversion's path). Existing ledgers still
 * migrate step by step (migrate.ts). It must equal the result of all the
 * steps, column order included (an added column goes last, as ALTER TABLE
 * puts it): test/ledger/schema.integration.test.ts compares the two. Every
 * index here is used by some query's plan (the query-plan guard checks it).
 * When a step is added to LEDGER_MIGRATIONS, change this to match; until
 * then new ledgers are migrated step by step (the versions differ).
 */
export const LEDGER_SCHEMA = {
	version: 17,
	script: `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE rewards (
	seq INTEGER PRIMARY KEY,
	key TEXT NOT NULL,
	ruleid INTEGER NOT NULL,
	customid TEXT NOT NULL,
	eventname TEXT NOT NULL,
	usertype TEXT NOT NULL,
	amount INTEGER NOT NULL,
	redeemed INTEGER NOT NULL DEFAULT 0,
	rewardunit TEXT NOT NULL,
	rewardtype TEXT NOT NULL,
	status TEXT NOT NULL,
	comment TEXT,
	hold_until TEXT,
	rewarded_at TEXT,
	coupon TEXT,
	couponname TEXT,
	coupondetails TEXT,
	couponimage TEXT,
	campaignid INTEGER NOT NULL,
	campaignname TEXT NOT NULL,
	growthhack TEXT NOT NULL,
	friend_userkey TEXT NOT NULL,
	friend_email TEXT,
	friend_name TEXT,
	friend_profileimage TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	version INTEGER NOT NULL DEFAULT 1,
	fraudsignals TEXT NOT NULL DEFAULT '[]',
	reversed INTEGER NOT NULL DEFAULT 0,
	settled INTEGER NOT NULL DEFAULT 0,
	percent INTEGER,
	coupon_seen_at TEXT,
	payoutid TEXT,
	payout_state TEXT
);
CREATE INDEX rewards_hold ON rewards(hold_until) WHERE hold_until IS NOT NULL;
CREATE INDEX rewards_wallet ON rewards(seq) WHERE status = 'Approved' AND rewardtype = 'InstoreCredits';
CREATE TABLE balances (
	rewardunit TEXT NOT NULL,
	growthhack TEXT NOT NULL,
	campaignid INTEGER NOT NULL,
	campaignname TEXT NOT NULL,
	pending INTEGER NOT NULL DEFAULT 0,
	approved INTEGER NOT NULL DEFAULT 0,
	claimed INTEGER NOT NULL DEFAULT 0,
	owed INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (rewardunit, growthhack, campaignid)
) WITHOUT ROWID;
CREATE TABLE outbox (
	id INTEGER NOT NULL,
	kind TEXT NOT NULL,
	ref TEXT NOT NULL PRIMARY KEY,
	payload TEXT NOT NULL,
	version INTEGER NOT NULL DEFAULT 0,
	attempts INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER NOT NULL,
	last_error TEXT,
	created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE ledger_transactions (
	txid TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	payload TEXT NOT NULL,
	state TEXT NOT NULL CHECK (state IN ('prepared', 'committed', 'aborted')),
	lease_until INTEGER NOT NULL,
	result TEXT,
	updated_at INTEGER NOT NULL
);
CREATE INDEX ledger_transactions_lease ON ledger_transactions(lease_until) WHERE state = 'prepared';
CREATE INDEX ledger_transactions_done ON ledger_transactions(updated_at) WHERE state <> 'prepared';
CREATE TABLE reward_locks (seq INTEGER PRIMARY KEY, txid TEXT NOT NULL);
CREATE INDEX reward_locks_txid ON reward_locks(txid);
CREATE TABLE idempotency_keys (
	key TEXT PRIMARY KEY,
	fingerprint TEXT NOT NULL,
	result TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
CREATE TABLE refunds (
	customid TEXT NOT NULL,
	refundid TEXT NOT NULL,
	requested INTEGER,
	refundvalue INTEGER NOT NULL,
	refunded INTEGER NOT NULL,
	transactionvalue INTEGER,
	full INTEGER NOT NULL,
	reason TEXT,
	outcome TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (customid, refundid)
);
CREATE TABLE clawbacks (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	rewardunit TEXT NOT NULL,
	growthhack TEXT NOT NULL,
	campaignid INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	customid TEXT NOT NULL,
	refundid TEXT NOT NULL,
	amount INTEGER NOT NULL,
	paid INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX clawbacks_open ON clawbacks(rewardunit, growthhack, campaignid, id) WHERE paid < amount;
CREATE TABLE milestone_events (
	ruleid INTEGER NOT NULL,
	customid TEXT NOT NULL,
	friend_userkey TEXT NOT NULL,
	milestone INTEGER NOT NULL,
	reversed INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (ruleid, customid)
) WITHOUT ROWID;
CREATE INDEX milestone_events_customid ON milestone_events(customid);
CREATE TABLE payouts (
	seq INTEGER NOT NULL,
	n INTEGER NOT NULL,
	amount INTEGER NOT NULL,
	state TEXT NOT NULL,
	customer TEXT,
	stripe_id TEXT,
	error_code TEXT,
	request_id TEXT,
	attempts INTEGER NOT NULL DEFAULT 0,
	sent_at INTEGER,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (seq, n)
);
CREATE INDEX payouts_open ON payouts(updated_at) WHERE state IN ('due', 'sending');
CREATE INDEX rewards_payout_state ON rewards(payout_state, seq) WHERE rewardtype = 'Stripe';
CREATE UNIQUE INDEX rewards_milestone ON rewards(key) WHERE key LIKE 'milestone:%';
CREATE UNIQUE INDEX rewards_rule_friend_event ON rewards(ruleid, friend_userkey, customid, key);
CREATE TABLE dispute_holds (
	dispute TEXT NOT NULL,
	seq INTEGER NOT NULL,
	previous_status TEXT NOT NULL,
	previous_hold_until TEXT,
	at INTEGER NOT NULL,
	PRIMARY KEY (dispute, seq)
) WITHOUT ROWID;
CREATE TABLE profile (one INTEGER PRIMARY KEY CHECK (one = 1), generation INTEGER NOT NULL, body TEXT);
CREATE TABLE friends (
	userkey TEXT PRIMARY KEY,
	userid INTEGER NOT NULL,
	email TEXT,
	useraccountid TEXT,
	name TEXT,
	profileimage TEXT,
	status TEXT NOT NULL,
	registered_at TEXT NOT NULL,
	attributed_at TEXT,
	erased_at TEXT
) WITHOUT ROWID;
CREATE INDEX friends_page ON friends(userid);
INSERT INTO meta (key, value) VALUES ('schema_version', '17');
`,
} as const;
