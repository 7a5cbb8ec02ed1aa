/**
 * Ledger schema step 10 (issue 33, rows written per conversion): the
 * rewards table without AUTOINCREMENT, and one index for a grant's key and
 * its event. A reward cost 7 rows (the row, its sqlite_sequence row, the
 * key's UNIQUE index, rewards_customid, rewards_friend, rewards_rule_friend,
 * rewards_wallet while it is spendable); now 5.
 *
 * - Rewards are never deleted (only a whole ledger is: `deleteAll`), so the
 *   largest seq stays in the table and the next one (largest + 1) is still
 *   larger than every seq ever given: a reward id is never reused without
 *   AUTOINCREMENT's sequence row.
 * - A grant's key names its event (`customid:ruleid`, rewards/rules.ts), so
 *   (customid, key) is unique exactly when the key is, and one index answers
 *   both the grant's lookup (`rewardRowByKey`) and the event's (refunds,
 *   `eventRewardIds`). A milestone reward's key names its rule instead
 *   (milestones.ts): its uniqueness is kept by a partial index that holds
 *   milestone rewards only, so no other reward writes a row for it.
 *
 * The rewards are carried over through `meta` (a table of the newest schema,
 * so the query-plan guard can explain every statement), one meta row each
 * (so no value grows past the 2 MB a row may hold, as one JSON array of
 * them all could), in the step's one transaction: bounded by this user's
 * rewards, and run once.
 */

const COLUMNS = `seq, key, ruleid, customid, eventname, usertype, amount, redeemed, rewardunit, rewardtype, status, comment, hold_until,
	rewarded_at, coupon, couponname, coupondetails, couponimage, campaignid, campaignname, growthhack, friend_userkey, friend_email,
	friend_name, friend_profileimage, created_at, updated_at, version, fraudsignals, reversed, settled, percent, coupon_seen_at, payoutid,
	payout_state`;
const FROM_JSON = Array.from({ length: COLUMNS.split(",").length }, (_, i) => `m.value ->> ${i}`).join(", ");
/** The meta keys of the carried rows: 'rewards_step_10:<seq>', a range of meta's primary key. */
const chunks = (key: string) => `${key} >= 'rewards_step_10:' AND ${key} < 'rewards_step_10;'`;

export const REWARDS_STEP_10: readonly string[] = [
	`INSERT INTO meta (key, value) SELECT 'rewards_step_10:' || seq, json_array(${COLUMNS}) FROM rewards`,
	`DROP TABLE rewards`,
	`CREATE TABLE rewards (
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
)`,
	`INSERT INTO rewards (${COLUMNS}) SELECT ${FROM_JSON} FROM meta m WHERE ${chunks("m.key")}`,
	`DELETE FROM meta WHERE ${chunks("key")}`,
	`DELETE FROM sqlite_sequence WHERE name = 'rewards'`,
	`CREATE INDEX rewards_friend ON rewards(friend_userkey, seq)`,
	`CREATE INDEX rewards_rule_friend ON rewards(ruleid, friend_userkey)`,
	`CREATE INDEX rewards_hold ON rewards(hold_until) WHERE hold_until IS NOT NULL`,
	`CREATE INDEX rewards_wallet ON rewards(seq) WHERE status = 'Approved' AND rewardtype = 'InstoreCredits'`,
	`CREATE INDEX rewards_payout_state ON rewards(payout_state, seq) WHERE rewardtype = 'Stripe'`,
	`CREATE UNIQUE INDEX rewards_event_key ON rewards(customid, key)`,
	`CREATE UNIQUE INDEX rewards_milestone ON rewards(key) WHERE key LIKE 'milestone:%'`,
];
