/**
 * The UserLedger's own SQLite schema, created in its constructor. Amounts are
 * integer hundredths; times are ISO strings except outbox due times (epoch ms,
 * compared with Date.now()).
 */
export const LEDGER_SCHEMA = [
	`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	// seq is the visible part of the reward id (`${userkey}-${seq}`); AUTOINCREMENT so a number is never reused.
	`CREATE TABLE IF NOT EXISTS rewards (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		key TEXT NOT NULL UNIQUE,
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
		version INTEGER NOT NULL DEFAULT 1
	)`,
	`CREATE INDEX IF NOT EXISTS rewards_friend ON rewards(friend_userkey, seq)`,
	`CREATE INDEX IF NOT EXISTS rewards_rule_friend ON rewards(ruleid, friend_userkey)`,
	`CREATE INDEX IF NOT EXISTS rewards_hold ON rewards(hold_until) WHERE hold_until IS NOT NULL`,
	`CREATE INDEX IF NOT EXISTS rewards_wallet ON rewards(seq) WHERE status = 'Approved' AND rewardtype = 'InstoreCredits'`,
	// Running totals, so a balance read costs the number of campaigns, not the number of rewards.
	`CREATE TABLE IF NOT EXISTS balances (
		rewardunit TEXT NOT NULL,
		growthhack TEXT NOT NULL,
		campaignid INTEGER NOT NULL,
		campaignname TEXT NOT NULL,
		pending INTEGER NOT NULL DEFAULT 0,
		approved INTEGER NOT NULL DEFAULT 0,
		claimed INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (rewardunit, growthhack, campaignid)
	)`,
	// What must leave the object, written in the same transaction as the change. `ref` makes an entry
	// unique (one projection entry per reward, one coupon claim per reward, one entry per event id);
	// `version` lets a flush remove a projection entry only if no newer change arrived meanwhile.
	`CREATE TABLE IF NOT EXISTS outbox (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		kind TEXT NOT NULL,
		ref TEXT NOT NULL UNIQUE,
		payload TEXT NOT NULL,
		version INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 0,
		next_attempt_at INTEGER NOT NULL,
		last_error TEXT,
		created_at TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS outbox_due ON outbox(next_attempt_at)`,
];

// MIGRATION(issue-13): rewards gain `fraudsignals` (JSON array of signal codes, see src/fraud/signals.ts).
// Idempotent, run after LEDGER_SCHEMA in the constructor; fold into issue 9's versioned step list when merging.
export function addFraudSignalsColumn(sql: SqlStorage): void {
	const has = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('rewards') WHERE name = 'fraudsignals'").toArray().length > 0;
	if (!has) sql.exec("ALTER TABLE rewards ADD COLUMN fraudsignals TEXT NOT NULL DEFAULT '[]'");
}

/** A row of the ledger's rewards table (a type alias, so it satisfies SqlStorage's row constraint). */
export type RewardRow = {
	seq: number;
	key: string;
	ruleid: number;
	customid: string;
	eventname: string;
	usertype: string;
	amount: number;
	redeemed: number;
	rewardunit: string;
	rewardtype: string;
	status: string;
	comment: string | null;
	hold_until: string | null;
	rewarded_at: string | null;
	coupon: string | null;
	couponname: string | null;
	coupondetails: string | null;
	couponimage: string | null;
	campaignid: number;
	campaignname: string;
	growthhack: string;
	friend_userkey: string;
	friend_email: string | null;
	friend_name: string | null;
	friend_profileimage: string | null;
	created_at: string;
	updated_at: string;
	version: number;
	/** JSON array of the fraud signal codes that fired when the reward was created. */
	fraudsignals: string;
};

/** A row of the ledger's outbox table. */
export type OutboxRow = {
	id: number;
	kind: "projection" | "webhook" | "coupon";
	ref: string;
	payload: string;
	version: number;
	attempts: number;
	next_attempt_at: number;
	last_error: string | null;
	created_at: string;
};
