import { seqOfRewardId } from "../domain/ledger-ids";
import type { WebhookType } from "../domain/outbox-event";
import { webhookEvent } from "../outbox/events";
import { fromHundredths } from "../rewards/money";
import { bucketDelta, contribution, isZeroDelta } from "./balance";
import { type BalanceKey, owedOf, payClawbacks, restOf, rowsWithOwed, settlingRewards } from "./clawbacks";
import { couponTransition, markCouponsSeen } from "./coupons";
import { queueProjectionOf, queueWebhook } from "./outbox";
import { reconcilePayouts } from "./payouts";
import { Refused } from "./refused";
import { queueRewardEmail } from "./reward-emails";
import { toView } from "./rows";
import type { RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";
import type { RewardGrant } from "./types";

/**
 * The synchronous writes of the ledger. Each helper keeps the three things
 * that must never drift apart in step: the reward row, its balance row and
 * the outbox entries that report the change. Callers run them inside one
 * `transactionSync`.
 */

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The webhook event id of a reward change: stable for (app, user, reward,
 * version), so a replayed flush records nothing twice.
 */
export const rewardEventId = (appid: string, userkey: string, seq: number, version: number) => `evt_${appid}_${userkey}_${seq}_v${version}`;

/** One reward by its number, or undefined. */
export function rewardRow(sql: SqlStorage, seq: number): RewardRow | undefined {
	return sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = ?", seq).toArray()[0];
}

/**
 * The reward of a grant, by its rule, friend, event and key (rewards_rule_friend_event, ledger schema step 17: every grant
 * of an event names the event's user as its friend, so this finds the reward its key was given to), or undefined.
 */
export function rewardRowByKey(sql: SqlStorage, grant: Pick<RewardGrant, "ruleid" | "friend" | "customid" | "key">): RewardRow | undefined {
	return sql
		.exec<RewardRow>(
			"SELECT * FROM rewards WHERE ruleid = ? AND friend_userkey = ? AND customid = ? AND key = ?",
			grant.ruleid,
			grant.friend.userkey,
			grant.customid,
			grant.key,
		)
		.toArray()[0];
}

/** One reward of `userkey`'s ledger by its public id, or undefined (also for an id of another ledger). */
export function rewardRowById(sql: SqlStorage, userkey: string, rewarddtlid: string): RewardRow | undefined {
	const seq = seqOfRewardId(rewarddtlid, userkey);
	return seq === null ? undefined : rewardRow(sql, seq);
}

/** One reward of this ledger by its public id, or a `reward_not_found` refusal. */
export function rewardOrRefuse(tx: TxContext, rewarddtlid: string): RewardRow {
	const row = rewardRowById(tx.sql, tx.userkey, rewarddtlid);
	if (!row) throw new Refused({ code: "reward_not_found", rewarddtlid, message: "no such reward" });
	return row;
}

type BalanceSubject = Pick<RewardRow, "status" | "amount" | "redeemed" | "reversed" | "settled">;

const contributionOf = (r: BalanceSubject) => contribution(r.status, r.amount, r.redeemed, r.reversed, r.settled);

/**
 * Moves the reward's balance row from what `before` contributed to what
 * `after` contributes. Returns what the row owes in clawbacks after the
 * move, or null when nothing moved (the row was not read).
 */
function applyBalance(sql: SqlStorage, before: BalanceSubject | null, after: RewardRow): number | null {
	const delta = bucketDelta(before ? contributionOf(before) : { pending: 0, approved: 0, claimed: 0 }, contributionOf(after));
	if (before && isZeroDelta(delta)) return null;
	return sql
		.exec<{ owed: number }>(
			`INSERT INTO balances (rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed) VALUES (?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (rewardunit, growthhack, campaignid) DO UPDATE SET campaignname = excluded.campaignname,
		   pending = pending + excluded.pending, approved = approved + excluded.approved, claimed = claimed + excluded.claimed
		 RETURNING owed`,
			after.rewardunit,
			after.growthhack,
			after.campaignid,
			after.campaignname,
			delta.pending,
			delta.approved,
			delta.claimed,
		)
		.one().owed;
}

/** Queues the change's projection and, unless the caller knows the app has no webhook endpoint (`webhook` false), its event. */
function report(ctx: TxContext, row: RewardRow, type: WebhookType, extra: Record<string, unknown>, webhook = true): void {
	queueProjectionOf(ctx, row.seq, row.version);
	if (webhook) {
		const payload = { userkey: ctx.userkey, ...extra, reward: toView(ctx.userkey, row) };
		queueWebhook(ctx.sql, webhookEvent(ctx.appid, type, payload, rewardEventId(ctx.appid, ctx.userkey, row.seq, row.version)), ctx.nowMs);
	}
	// The event carries the code to the product, which may show it: it can no longer go back to the pool (coupons.ts).
	markCouponsSeen(ctx.sql, [row], ctx.nowMs);
}

/**
 * A new reward's number: the next after the seq floor a ledger restore left (restore.ts: numbers of rewards the
 * restore forgot are never given again, the product may hold their ids), else NULL, SQLite's next rowid.
 */
const NEXT_SEQ_SQL = `(SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'seq_floor'
	AND CAST(value AS INTEGER) >= (SELECT COALESCE(MAX(seq), 0) FROM rewards))`;

/**
 * Creates the reward of a grant (amount already in hundredths) with its
 * balance, projection, `reward.created` event, for an approved reward
 * of a coupon campaign the claim of a code (coupons.ts), and for an earned
 * one its email (reward-emails.ts).
 */
export function insertReward(ctx: TxContext, grant: RewardGrant, amount: number): RewardRow {
	const now = iso(ctx.nowMs);
	// Only a reward under review approves itself; a Suspicious one waits for a person.
	const holdUntil = grant.status === "UnderReview" && grant.holdUntil ? new Date(grant.holdUntil).toISOString() : null;
	const row = ctx.sql
		.exec<RewardRow>(
			`INSERT INTO rewards (seq, key, ruleid, customid, eventname, usertype, amount, rewardunit, rewardtype, status, comment, hold_until,
			   campaignid, campaignname, growthhack, friend_userkey, friend_email, friend_name, friend_profileimage, created_at, updated_at,
			   fraudsignals, percent)
			 VALUES (${NEXT_SEQ_SQL}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
			grant.key,
			grant.ruleid,
			grant.customid,
			grant.eventname,
			grant.usertype,
			amount,
			grant.rewardunit,
			grant.rewardtype,
			grant.status,
			grant.comment,
			holdUntil,
			grant.campaignid,
			grant.campaignname,
			grant.growthhack,
			grant.friend.userkey,
			grant.friend.email,
			grant.friend.name,
			grant.friend.profileimage,
			now,
			now,
			JSON.stringify(grant.fraudsignals ?? []),
			grant.percent ? 1 : 0,
		)
		.one();
	const owed = applyBalance(ctx.sql, null, row);
	// No entry for an app that had no webhook endpoint when the event happened (grant.webhooks, docs/webhooks.md).
	report(ctx, row, "reward.created", {}, grant.webhooks !== false);
	// Its balance row owes nothing (the common case): nothing to settle, and no need to read the row again.
	const paid = owed === 0 ? 0 : settleIfOwed(ctx, row);
	couponTransition(ctx, null, row);
	// A reward granted Approved owes its worth: one of the reconcile's call sites (payouts.ts).
	const payout = reconcilePayouts(ctx, row);
	if (payout.payout_state !== undefined) ctx.sql.exec("UPDATE rewards SET payout_state = ? WHERE seq = ?", payout.payout_state, row.seq);
	const stored = asStored(ctx, { ...row, ...payout }, paid);
	// With the reward it announces: written once, when the grant creates it (docs/messages.md).
	if (grant.rewardemail !== false) queueRewardEmail(ctx, null, stored);
	return stored;
}

/** `row`, read again when settling clawbacks paid something (`paid` > 0), which rewrites rewards: the row as stored. */
export const asStored = (ctx: TxContext, row: RewardRow, paid: number): RewardRow =>
	paid > 0 ? (rewardRow(ctx.sql, row.seq) ?? row) : row;

/** The fields of a reward a change may touch. */
export type RewardPatch = Partial<
	Pick<
		RewardRow,
		| "status"
		| "redeemed"
		| "reversed"
		| "settled"
		| "comment"
		| "hold_until"
		| "rewarded_at"
		| "coupon"
		| "couponname"
		| "coupondetails"
		| "couponimage"
		| "payoutid"
		| "payout_state"
	>
>;

type RewardEvent = { type: WebhookType; extra: Record<string, unknown> };

/**
 * Applies `patch` to a reward: new version, balance moved, projection queued
 * and, when `event` is given, that webhook event queued. When the reward
 * ends up approved with credit left and its balance row owes clawbacks, that
 * credit pays them off first (settleOwed).
 */
export function updateReward(ctx: TxContext, before: RewardRow, patch: RewardPatch, event?: RewardEvent): RewardRow {
	const after = writeReward(ctx, before, patch, event);
	settleIfOwed(ctx, after);
	return after;
}

/**
 * updateReward without settling: for settleOwed itself, and a reversal, which
 * settles once all its rewards are reversed. A coupon reward that becomes or
 * stops being approved claims or releases its code (coupons.ts).
 */
export function writeReward(ctx: TxContext, before: RewardRow, patch: RewardPatch, event?: RewardEvent): RewardRow {
	const changed: RewardRow = { ...before, ...patch, version: before.version + 1, updated_at: iso(ctx.nowMs) };
	// Books no Stripe payout: the changes of what a reward owes call the reconcile themselves (payouts.ts names them).
	const after: RewardRow = { ...changed, ...couponTransition(ctx, before, changed) };
	ctx.sql.exec(
		`UPDATE rewards SET status = ?, redeemed = ?, reversed = ?, settled = ?, comment = ?, hold_until = ?, rewarded_at = ?, coupon = ?,
		   couponname = ?, coupondetails = ?, couponimage = ?, updated_at = ?, version = ?, payoutid = ?, payout_state = ? WHERE seq = ?`,
		after.status,
		after.redeemed,
		after.reversed,
		after.settled,
		after.comment,
		after.hold_until,
		after.rewarded_at,
		after.coupon,
		after.couponname,
		after.coupondetails,
		after.couponimage,
		after.updated_at,
		after.version,
		after.payoutid,
		after.payout_state,
		after.seq,
	);
	applyBalance(ctx.sql, before, after);
	queueRewardEmail(ctx, before, after);
	if (event) report(ctx, after, event.type, event.extra);
	else queueProjectionOf(ctx, after.seq, after.version);
	return after;
}

/** A reward's balance row. */
export const keyOf = (row: Pick<RewardRow, "rewardunit" | "growthhack" | "campaignid">): BalanceKey => ({
	rewardunit: row.rewardunit,
	growthhack: row.growthhack,
	campaignid: row.campaignid,
});

/** settleOwed for the balance row of `row` when its credit can pay; returns what was paid (hundredths). */
function settleIfOwed(ctx: TxContext, row: RewardRow): number {
	return row.status === "Approved" && row.rewardtype === "InstoreCredits" && restOf(row) > 0 ? settleOwed(ctx, keyOf(row)) : 0;
}

/**
 * Pays off the clawbacks of one balance row with its approved wallet credit,
 * oldest reward first, before any of it can be redeemed: each paying reward's
 * `settled` grows (its approved part moves to claimed) and a reward used up
 * becomes `Rewarded`. Rewards locked by a transaction other than `ownTxid`
 * are left for when their lock goes (see finish in transactions.ts).
 */
export function settleOwed(ctx: TxContext, key: BalanceKey, ownTxid?: string): number {
	let owed = owedOf(ctx.sql, key);
	if (owed <= 0) return 0;
	let paid = 0;
	for (const row of settlingRewards(ctx.sql, key, ownTxid)) {
		if (owed <= 0) break;
		const rest = restOf(row);
		const take = Math.min(rest, owed);
		owed -= take;
		paid += take;
		const usedUp = take === rest;
		writeReward(
			ctx,
			row,
			usedUp
				? { settled: row.settled + take, status: "Rewarded", rewarded_at: iso(ctx.nowMs), hold_until: null }
				: { settled: row.settled + take },
			{ type: "reward.clawback_paid", extra: { paidamount: fromHundredths(take), owed: fromHundredths(owed), previousstatus: row.status } },
		);
	}
	if (paid > 0) payClawbacks(ctx.sql, key, paid, iso(ctx.nowMs));
	return paid;
}

/** settleOwed for every balance row that owes something. */
export function settleAllOwed(ctx: TxContext, ownTxid?: string): void {
	for (const key of rowsWithOwed(ctx.sql)) settleOwed(ctx, key, ownTxid);
}
