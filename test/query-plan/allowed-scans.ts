import type { AllowedScan } from "./plans";

/**
 * Full scans (`sql` is matched against the statement with its whitespace squashed) of growing tables that are allowed, each with what keeps it
 * small. Keep this list short: a scan on a request path belongs here only
 * when its table is bounded per ledger (or per call) by something other
 * than use. Every entry must still match a statement the tour sends.
 */
export const ALLOWED_SCANS: readonly AllowedScan[] = [
	// ---- D1, local development only ----
	{
		file: "src/db/dev-mail.ts",
		sql: "FROM dev_mail ORDER BY seq DESC LIMIT ?",
		table: "dev_mail",
		bound: "the primary key read backwards, LIMIT 100 rows; only in local development (a deployed Worker answers 404 and keeps no mail)",
	},
	// ---- a ledger's own SQLite (one user's rewards) ----
	{
		file: "src/ledger/restore.ts",
		sql: "SELECT COALESCE(MAX(seq), 0) AS seq, COALESCE(MAX(version), 0) AS version FROM rewards",
		table: "rewards",
		bound:
			"one user's rewards, read once per point-in-time restore of that ledger (a superuser's admin call, issue 51), never on a product's path",
	},
	{
		file: "src/ledger/restore.ts",
		sql: "SELECT COUNT(*) AS n FROM payouts WHERE state IN ('sending', 'paid') AND sent_at >= ?",
		table: "payouts",
		bound:
			"one user's payouts (one or two per Stripe reward), read once per point-in-time restore of that ledger (a superuser's admin call)",
	},
	{
		file: "src/ledger/restore.ts",
		sql: "UPDATE rewards SET version = ? RETURNING seq, version",
		table: "rewards",
		bound: "one user's rewards, each re-sent to D1 once per point-in-time restore of that ledger (a superuser's admin call, issue 51)",
	},
	{
		file: "src/ledger/friends.ts",
		sql: "FROM friends ORDER BY userid DESC LIMIT ? OFFSET ?",
		table: "friends",
		bound:
			"one referrer's friends through friends_page, newest first: the page (at most 500) and its offset, which the count kept in meta bounds " +
			"(a page at or past it reads nothing); the same steps D1's page took through (referrer_userid, userid) before issue 49 piece 4",
	},
	{
		file: "src/ledger/reads.ts",
		sql: "FROM balances",
		table: "balances",
		bound: "one running-total row per (unit, growth hack, campaign) the user earned in: a handful, never one per reward",
	},
	{
		file: "src/ledger/clawbacks.ts",
		sql: "FROM balances WHERE owed > 0",
		table: "balances",
		bound: "one running-total row per (unit, growth hack, campaign) the user earned in",
	},
	{
		file: "src/ledger/outbox.ts",
		sql: "FROM outbox",
		table: "outbox",
		bound: "entries not yet delivered to D1 or the queue (each is deleted once delivered): a few, more only while D1 is down",
	},
	{
		// queueConversionEvent, moved out of outbox.ts with the other writers of entries: the same table, the same bound.
		file: "src/ledger/outbox-queue.ts",
		sql: "FROM outbox",
		table: "outbox",
		bound: "entries not yet delivered to D1 or the queue (each is deleted once delivered): a few, more only while D1 is down",
	},
	{
		file: "src/ledger/flush-schedule.ts",
		sql: "SELECT (SELECT COUNT(*) FROM outbox) AS pending",
		table: "outbox",
		bound: "entries not yet delivered (each is deleted once delivered), counted once after each flush: a few, more only while D1 is down",
	},
	{
		file: "src/ledger/privacy.ts",
		sql: "FROM outbox WHERE kind = 'webhook'",
		table: "outbox",
		bound: "webhooks not yet handed to D1 (deleted once delivered), on an erasure only",
	},
	{
		file: "src/ledger/reversal.ts",
		sql: "FROM ledger_transactions WHERE state = 'prepared'",
		table: "ledger_transactions",
		bound: "transactions prepared and not yet committed or aborted (the partial index holds only those; a lease ends in seconds)",
	},
	{
		file: "src/ledger/clawbacks.ts",
		sql: "seq NOT IN (SELECT seq FROM reward_locks",
		table: "reward_locks",
		bound: "rewards locked by prepared transactions, released at their commit or abort",
	},
	{
		file: "src/ledger/clawbacks.ts",
		sql: "SELECT * FROM clawbacks ORDER BY id",
		table: "clawbacks",
		bound: "UserLedger.listClawbacks, for tests: no request path reads every clawback",
	},
	{
		file: "src/ledger/redemption.ts",
		sql: "rewardtype = 'InstoreCredits' AND amount - reversed - redeemed - settled > 0",
		table: "rewards",
		bound: "the user's approved wallet rewards (rewards_wallet); redeem by amount stops once the amount is covered",
	},
	{
		file: "src/ledger/clawbacks.ts",
		sql: "rewardtype = 'InstoreCredits' AND rewardunit = ?",
		table: "rewards",
		bound: "the user's approved wallet rewards (rewards_wallet), read to settle clawbacks after a refund only",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "next_attempt_at, last_error, created_at)) FROM outbox",
		table: "outbox",
		bound: "ledger schema step 9, once per existing ledger: the entries not yet delivered, carried over to the rebuilt outbox",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "next_attempt_at, last_error, created_at) FROM outbox",
		table: "outbox",
		bound: "ledger schema step 11, once per existing ledger: the entries not yet delivered, carried over to the outbox keyed by its ref",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "payoutid, payout_state) FROM rewards",
		table: "rewards",
		bound: "ledger schema step 10, once per existing ledger: its rewards, carried over to the rebuilt table through meta",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "pending, approved, claimed, owed) FROM balances",
		table: "balances",
		bound:
			"ledger schema step 12, once per existing ledger: its running totals (one per unit, growth hack and campaign), carried over through meta",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "SELECT seq, 1, amount - reversed, 'paid', payoutid, 1, 0, 0 FROM rewards WHERE payoutid IS NOT NULL",
		table: "rewards",
		bound: "once per ledger, in its migration to schema step 7 (the payout records of rewards paid before)",
	},
	{
		file: "src/ledger/migrate.ts",
		sql: "DELETE FROM outbox WHERE kind = 'payout'",
		table: "outbox",
		bound: "once per ledger, in its migration to schema step 7 (the outbox holds what is not flushed yet)",
	},
	{
		file: "src/ledger/by-friend.ts",
		sql: "SELECT seq, key FROM rewards WHERE customid = ? ORDER BY seq",
		table: "rewards",
		bound:
			"one user's rewards, once per request that does not name the event's user (ledger schema step 17): a refund prepared " +
			"before the upgrade (a lease of seconds), or a call from a Worker of the previous version during a deploy; this code always names it",
	},
	{
		file: "src/ledger/comment-redaction.ts",
		sql: "SELECT seq, comment FROM rewards WHERE comment IS NOT NULL",
		table: "rewards",
		bound: "the erased person's own ledger (one user's rewards), once, at erasure",
	},
	{
		file: "src/db/event-backfill.ts",
		sql: "FROM apps WHERE legacy_events = 1 ORDER BY appid LIMIT 1",
		table: "apps",
		bound:
			"the partial index apps_legacy_events holds only the apps still marked by migration 0045 (those with events from before the gates), fewer every run of the backfill; its first entry, once a page",
	},
	// ---- an event gate's own SQLite (src/ledger/event-gate.ts) ----
	{
		file: "src/ledger/event-gate.ts",
		sql: "FROM pending p JOIN events e ON e.appid = p.appid AND e.customid = p.customid WHERE p.created_at < ?",
		table: "pending",
		bound:
			"the gate's events not yet confirmed, read in key order up to LIMIT 100: it passes over at most those claimed in the last minute (the completion delay), about a minute of one gate's 1/64 of the claims; once a minute, by the completion pass",
	},
	{
		file: "src/ledger/event-gate.ts",
		sql: "DELETE FROM pending WHERE appid = ? AND customid = ?",
		table: "pending",
		bound: "a test twin's reset only (admin/test-data.ts): the gate's events not yet confirmed, about a minute of its claims",
	},
	{
		file: "src/ledger/event-gate.ts",
		sql: "WHERE e.appid = ? AND e.campaignid = ? LIMIT ?",
		table: "pending",
		bound: "a campaign's deletion only (an admin call): the gate's events not yet confirmed, about a minute of its claims",
	},
];
