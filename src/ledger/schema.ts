import type { Distribution } from "../db/campaigns";
import { REWARDS_STEP_10 } from "./schema-step-10";
import { OUTBOX_STEP_11 } from "./schema-step-11";
import { type LedgerStatement, WITHOUT_ROWID_STEP_12 } from "./schema-step-12";
import { PROFILE_STEP_14 } from "./schema-step-14";
import { FRIENDS_STEP_15 } from "./schema-step-15";
import { NO_FRIEND_INDEX_STEP_16 } from "./schema-step-16";
import { EVENT_IN_RULE_INDEX_STEP_17 } from "./schema-step-17";
import type { RewardStatus, UserType } from "./types";

/**
 * The UserLedger's own SQLite schema, as a list of migration steps applied in
 * its constructor (see migrate.ts). Step N brings the schema to version N; the
 * version reached is stored in the object's `meta` table. Never edit a step
 * that has shipped: append a new one, and bring LEDGER_SCHEMA (schema-latest.ts,
 * what a new ledger runs in one go) to the same shape. Amounts are integer hundredths; times
 * are ISO strings except outbox due times and lease ends (epoch ms, compared
 * with Date.now()).
 */
export const LEDGER_MIGRATIONS: readonly (readonly LedgerStatement[])[] = [
	// 1: rewards, running balances and the outbox. `IF NOT EXISTS` because objects created before the
	// versioning ran these statements without recording a version.
	[
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
	],
	// 2: prepared multi-ledger transactions (transactions.ts) and the rewards they lock, and
	// idempotency keys recorded in the same transaction as the change they guard.
	[
		`CREATE TABLE ledger_transactions (
			txid TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			payload TEXT NOT NULL,
			state TEXT NOT NULL CHECK (state IN ('prepared', 'committed', 'aborted')),
			lease_until INTEGER NOT NULL,
			result TEXT,
			updated_at INTEGER NOT NULL
		)`,
		`CREATE INDEX ledger_transactions_lease ON ledger_transactions(lease_until) WHERE state = 'prepared'`,
		`CREATE INDEX ledger_transactions_done ON ledger_transactions(updated_at) WHERE state <> 'prepared'`,
		`CREATE TABLE reward_locks (seq INTEGER PRIMARY KEY, txid TEXT NOT NULL)`,
		`CREATE INDEX reward_locks_txid ON reward_locks(txid)`,
		`CREATE TABLE idempotency_keys (
			key TEXT PRIMARY KEY,
			fingerprint TEXT NOT NULL,
			result TEXT NOT NULL,
			created_at INTEGER NOT NULL
		)`,
		`CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at)`,
	],
	// 3: rewards gain `fraudsignals` (JSON array of signal codes, see src/fraud/signals.ts).
	[`ALTER TABLE rewards ADD COLUMN fraudsignals TEXT NOT NULL DEFAULT '[]'`],
	// 4: refunds (see reversal.ts and clawbacks.ts). A reward keeps its original `amount`;
	// `reversed` is the part refunds took back and `settled` the part that paid off clawbacks, so the
	// reward is worth `amount - reversed` and has been used up to `redeemed + settled`. `percent` is 1
	// when the amount is a percent of the transaction value (a partial refund reduces it), 0 for a fixed
	// amount, NULL for rewards granted before this step (treated as fixed). `owed` is the running total
	// of unpaid clawbacks per balance row. `refunds` records every refund applied to an event in this
	// ledger (idempotency per refund, and the running refunded total); `clawbacks` the debts refunds
	// left behind and how much of each is paid off.
	[
		`ALTER TABLE rewards ADD COLUMN reversed INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE rewards ADD COLUMN settled INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE rewards ADD COLUMN percent INTEGER`,
		`CREATE INDEX rewards_customid ON rewards(customid)`,
		`ALTER TABLE balances ADD COLUMN owed INTEGER NOT NULL DEFAULT 0`,
		`CREATE TABLE refunds (
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
		)`,
		`CREATE TABLE clawbacks (
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
		)`,
		`CREATE INDEX clawbacks_open ON clawbacks(rewardunit, growthhack, campaignid, id) WHERE paid < amount`,
	],
	// 5: `coupon_seen_at`: when a reward's coupon code was first shown outside the service (a public read
	// or a webhook). A code not seen yet goes back to the pool if its reward stops being approved (coupons.ts).
	[`ALTER TABLE rewards ADD COLUMN coupon_seen_at TEXT`],
	// 6: Stripe payouts (payouts.ts): the balance transaction that paid the reward, and where its payout
	// stands (`pending`, `waiting_customer`, `failed`, `paid`; NULL for a reward that is not paid into Stripe).
	// The index finds the approved Stripe rewards still to pay (a new paymentcustomerid, a retry).
	[
		`ALTER TABLE rewards ADD COLUMN payoutid TEXT`,
		`ALTER TABLE rewards ADD COLUMN payout_state TEXT`,
		`CREATE INDEX rewards_payout_due ON rewards(seq) WHERE status = 'Approved' AND rewardtype = 'Stripe' AND payoutid IS NULL`,
	],
	// 7: milestones (milestones.ts, docs/rewards.md "Milestones"): each event of a milestone rule a referred
	// friend had, keyed by (rule, event); `reversed` once a full refund took the event back. The referrer's
	// milestone reward is paid once when the rule's distinct friends with a non-reversed event reach N.
	[
		`CREATE TABLE milestone_events (
			ruleid INTEGER NOT NULL,
			customid TEXT NOT NULL,
			friend_userkey TEXT NOT NULL,
			milestone INTEGER NOT NULL,
			reversed INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (ruleid, customid)
		) WITHOUT ROWID`,
		`CREATE INDEX milestone_events_customid ON milestone_events(customid)`,
	],
	// 8: the payout records (payouts.ts, issue 31): each credit or debit a Stripe reward sends, with its key
	// (its number n), its amount frozen before it first leaves, and its state. A reward paid before this step
	// gets one `paid` record of what it is worth now (its credit less the debits the old code booked), so
	// whatever it still owes or was overpaid is booked from there. The old payout entries of the outbox are
	// dropped: the records replace them, and the scheduled job re-drives rewards still `pending`.
	[
		`CREATE TABLE payouts (
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
	)`,
		`CREATE INDEX payouts_open ON payouts(updated_at) WHERE state IN ('due', 'sending')`,
		// A retry and the re-drive find the Stripe rewards by where their payouts stand.
		`CREATE INDEX rewards_payout_state ON rewards(payout_state, seq) WHERE rewardtype = 'Stripe'`,
		`DROP INDEX IF EXISTS rewards_payout_due`,
		`INSERT INTO payouts (seq, n, amount, state, stripe_id, attempts, sent_at, updated_at)
		 SELECT seq, 1, amount - reversed, 'paid', payoutid, 1, 0, 0 FROM rewards WHERE payoutid IS NOT NULL`,
		`DELETE FROM outbox WHERE kind = 'payout'`,
	],
	// 9: the outbox without AUTOINCREMENT and without its index on next_attempt_at (issue 33, rows written):
	// each entry written cost 4 rows (the row, its ref, its due time, sqlite_sequence), now 2. An id may be
	// used again once the entries above it are gone; everything that names an entry by id names its ref too
	// (deletes, postponements, the acknowledgement, the in-memory hold), and ids still grow among the entries
	// present, so they keep their order. The due queries read the table itself: it holds what is not yet
	// delivered, a few entries, more only while D1 or the queue is down (test/query-plan/allowed-scans.ts).
	// The waiting entries are carried over through `meta` (a table of the newest schema, so the query-plan
	// guard can explain every statement of this step), in the step's one transaction.
	[
		`INSERT INTO meta (key, value) SELECT 'outbox_step_9', json_group_array(json_array(id, kind, ref, payload, version, attempts,
		 next_attempt_at, last_error, created_at)) FROM outbox`,
		`DROP TABLE outbox`,
		`CREATE TABLE outbox (
		id INTEGER PRIMARY KEY,
		kind TEXT NOT NULL,
		ref TEXT NOT NULL UNIQUE,
		payload TEXT NOT NULL,
		version INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 0,
		next_attempt_at INTEGER NOT NULL,
		last_error TEXT,
		created_at TEXT NOT NULL
	)`,
		`INSERT INTO outbox (id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at)
		 SELECT e.value ->> 0, e.value ->> 1, e.value ->> 2, e.value ->> 3, e.value ->> 4, e.value ->> 5, e.value ->> 6, e.value ->> 7,
		   e.value ->> 8 FROM meta m, json_each(m.value) e WHERE m.key = 'outbox_step_9'`,
		`DELETE FROM meta WHERE key = 'outbox_step_9'`,
		`DELETE FROM sqlite_sequence WHERE name = 'outbox'`,
	],
	// 10: rewards without AUTOINCREMENT, and one index for a grant's key and its event (issue 33, rows
	// written): 7 rows a reward, now 5. What it relies on, and how the rewards are carried over: schema-step-10.ts.
	REWARDS_STEP_10,
	// 11: the outbox keyed by its ref alone, WITHOUT ROWID (issue 33, rows written): 1 row an entry instead of 2
	// (schema-step-11.ts).
	OUTBOX_STEP_11,
	// 12: balances and meta WITHOUT ROWID (issue 33, rows written): a new balance row, and a new ledger's
	// schema_version row, 1 row instead of 2 (schema-step-12.ts).
	WITHOUT_ROWID_STEP_12,
	// 13: the rewards a Stripe dispute holds (issue 47, dispute-holds.ts): what each was before, so a won
	// dispute restores it, and a hold is placed once per dispute and reward whatever the deliveries.
	[
		`CREATE TABLE dispute_holds (
		dispute TEXT NOT NULL,
		seq INTEGER NOT NULL,
		previous_status TEXT NOT NULL,
		previous_hold_until TEXT,
		at INTEGER NOT NULL,
		PRIMARY KEY (dispute, seq)
	) WITHOUT ROWID`,
	],
	// 14: the user's profile and its pointer to its referrer (issue 49, profile.ts): what a conversion reads of the user
	// instead of D1. One row; a ledger without it reads it from D1 once (operations/conversion-parties.ts).
	PROFILE_STEP_14,
	// 15: the referrer's friends (issue 49 piece 4, friends.ts; schema-step-15.ts).
	FRIENDS_STEP_15,
	// 16: no rewards_friend (issue 49, rows written): a Referrer reward 4 rows instead of 5; the reads by friend seek
	// rewards_rule_friend once per rule (schema-step-16.ts, by-friend.ts).
	NO_FRIEND_INDEX_STEP_16,
	// 17: the event's key folded into the rule index (issue 49, rows written): a reward 1 row fewer; an event's rewards are
	// read by the event and its user (schema-step-17.ts, by-friend.ts).
	EVENT_IN_RULE_INDEX_STEP_17,
];

/**
 * A row of the ledger's rewards table (a type alias, so it satisfies
 * SqlStorage's row constraint). `status`, `rewardtype` and `usertype` hold
 * only the values their types name: this ledger is their only writer.
 */
export type RewardRow = {
	seq: number;
	key: string;
	ruleid: number;
	customid: string;
	eventname: string;
	usertype: UserType;
	amount: number;
	redeemed: number;
	rewardunit: string;
	rewardtype: Distribution;
	status: RewardStatus;
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
	/** Hundredths taken back by refunds (0..amount). */
	reversed: number;
	/** Hundredths used to pay off clawbacks. */
	settled: number;
	/** 1: a percent of the transaction value; 0: fixed; null: granted before refunds existed (fixed). */
	percent: number | null;
	/** When the coupon code was first shown outside the service (ISO), or null: never (coupons.ts). */
	coupon_seen_at: string | null;
	/** The Stripe balance transaction that paid the reward (payouts.ts), or null. */
	payoutid: string | null;
	/** Where the reward's payouts stand (payouts.ts): due, sending, unknown, paid, failed, waiting_customer; null when it has none. */
	payout_state: PayoutState | null;
};

/** `pending` is the state of a reward queued before schema step 7; the scheduled job re-drives it. */
export type PayoutState = "pending" | "due" | "sending" | "unknown" | "waiting_customer" | "failed" | "paid";

/** One credit (amount > 0) or debit (amount < 0) of a Stripe reward, in hundredths (payouts.ts). */
export type PayoutRow = {
	seq: number;
	n: number;
	amount: number;
	/** `unknown`: sent, unanswered within Stripe's key lifetime, until the resolver reads Stripe's record; `void`: Stripe never applied it. */
	state: "due" | "sending" | "unknown" | "paid" | "void" | "failed" | "cancelled";
	/** The Stripe customer, frozen when the payout is first sent. */
	customer: string | null;
	stripe_id: string | null;
	error_code: string | null;
	request_id: string | null;
	attempts: number;
	sent_at: number | null;
	updated_at: number;
};

/** A refund applied to an event in this ledger. Amounts in hundredths. */
export type RefundRow = {
	customid: string;
	refundid: string;
	/** The refundvalue asked for, or null for a full reversal. */
	requested: number | null;
	/** The part of the transaction value this refund took (for a full reversal, what was left). */
	refundvalue: number;
	/** Refunded in total after this refund. */
	refunded: number;
	transactionvalue: number | null;
	full: number;
	reason: string | null;
	/** JSON of the ReversalOutcome this refund produced here, answered again to a repeat. */
	outcome: string;
	created_at: string;
};

/** A debt a refund left: the redeemed part of a reversed reward. Amounts in hundredths. */
export type ClawbackRow = {
	id: number;
	rewardunit: string;
	growthhack: string;
	campaignid: number;
	/** The reversed reward that left the debt. */
	seq: number;
	customid: string;
	refundid: string;
	amount: number;
	paid: number;
	created_at: string;
	updated_at: string;
};

/** An entry of the ledger's own outbox table (not D1's outbox_events): a projection, webhook, coupon claim or release, payout, audit or reward email waiting to leave the object, or another ledger's records it keeps (carried-records.ts). */
export type LedgerOutboxEntry = {
	id: number;
	kind: "projection" | "webhook" | "coupon" | "coupon_release" | "audit" | "payout" | "email" | "carried";
	ref: string;
	payload: string;
	version: number;
	attempts: number;
	next_attempt_at: number;
	last_error: string | null;
	created_at: string;
};

/** A prepared, committed or aborted multi-ledger transaction as this ledger keeps it. */
export type TransactionRow = {
	txid: string;
	kind: string;
	payload: string;
	state: "prepared" | "committed" | "aborted";
	lease_until: number;
	result: string | null;
	updated_at: number;
};
