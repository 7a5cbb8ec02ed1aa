import { z } from "zod";
import { rewardId } from "../domain/ledger-ids";
import { fromHundredths } from "../rewards/money";
import type { SqlCondition } from "./outbox-events";

/**
 * The D1 side of a ledger's outbox flush (src/ledger/outbox.ts): the read
 * projection of its rewards, the claim of a coupon code for a reward, and
 * the one batch a flush pass sends. Every statement here is idempotent, so
 * a flush replayed after a crash changes nothing twice.
 */

/** What the projection copies of a row of a ledger's rewards table (src/ledger/schema.ts; amounts in hundredths). */
export interface ProjectedRewardRow {
	seq: number;
	campaignid: number;
	eventname: string;
	usertype: string;
	amount: number;
	reversed: number;
	rewardunit: string;
	rewardtype: string;
	status: string;
	redeemed: number;
	comment: string | null;
	friend_userkey: string;
	created_at: string;
	updated_at: string;
	version: number;
	/** JSON array of fraud signal codes, stored as it is. */
	fraudsignals: string;
	payoutid: string | null;
	payout_state: string | null;
}

/** The versioned upsert of one reward into D1's read projection; an older version never overwrites a newer one. */
export function projectionStatement(db: D1Database, appid: string, userkey: string, row: ProjectedRewardRow): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO rewards (rewarddtlid, appid, userkey, campaignid, eventname, usertype, reward, rewardunit, rewardtype,
			   rewardstatus, redeemed, comment, friend_userkey, created_at, updated_at, version, fraudsignals, payoutid, payout_state)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (rewarddtlid) DO UPDATE SET reward = excluded.reward, rewardstatus = excluded.rewardstatus, redeemed = excluded.redeemed,
			   comment = excluded.comment, updated_at = excluded.updated_at, version = excluded.version, payoutid = excluded.payoutid,
			   payout_state = excluded.payout_state
			 WHERE excluded.version > rewards.version`,
		)
		.bind(
			rewardId(userkey, row.seq),
			appid,
			userkey,
			row.campaignid,
			row.eventname,
			row.usertype,
			// What the reward is worth now: a refund lowers it (reversal.ts).
			fromHundredths(row.amount - row.reversed),
			row.rewardunit,
			row.rewardtype,
			row.status,
			fromHundredths(row.redeemed),
			row.comment,
			row.friend_userkey,
			row.created_at,
			row.updated_at,
			row.version,
			row.fraudsignals ?? "[]",
			row.payoutid ?? null,
			row.payout_state ?? null,
		);
}

/** A code taken from a campaign's coupon pool for a reward. */
export interface AssignedCoupon {
	coupon: string;
	couponname: string;
	coupondetails: string;
	couponimage: string;
}

/**
 * Whose code a claim asks for: `couponKey` is the reward's globally unique key in `coupons.reward_key`;
 * `livemode` false draws from the campaign's test pool (a test twin's reward, docs/test-mode.md).
 */
export interface CouponRequest {
	couponKey: string;
	campaignid: number;
	livemode: boolean;
}

/** Claims a free code of the campaign's pool of the reward's mode, or returns the one it already holds; null when that pool is empty. */
export function couponClaimStatement(db: D1Database, claim: CouponRequest, nowIso: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE coupons SET reward_key = ?, assigned_at = COALESCE(assigned_at, ?)
			 WHERE couponid = COALESCE(
			   (SELECT couponid FROM coupons WHERE reward_key = ?),
			   (SELECT couponid FROM coupons WHERE campaignid = ? AND livemode = ? AND reward_key IS NULL ORDER BY couponid LIMIT 1))
			 RETURNING coupon, couponname, coupondetails, couponimage`,
		)
		.bind(claim.couponKey, nowIso, claim.couponKey, claim.campaignid, claim.livemode ? 1 : 0);
}

/** Runs the coupon claim (one round trip): the reward's code, or null when the campaign's pool is empty. */
export function claimCoupon(db: D1Database, claim: CouponRequest, nowIso: string): Promise<AssignedCoupon | null> {
	return couponClaimStatement(db, claim, nowIso).first<AssignedCoupon>();
}

/** Gives a reward's code back to its campaign's pool (the `reward_key` unique index); nothing when it holds none. */
export async function releaseCoupon(db: D1Database, couponKey: string): Promise<void> {
	await db.prepare("UPDATE coupons SET reward_key = NULL, assigned_at = NULL WHERE reward_key = ?").bind(couponKey).run();
}

const hooksRow = z.object({ hooks: z.number() });

/**
 * Sends one flush pass to D1 as ONE batch (a batch is a transaction):
 * `statements` (projection upserts with their counters, event records),
 * then, when `hooks` is given (`appHasWebhook`), a last statement that
 * reads whether the app has a webhook URL. Answers that (false without
 * `hooks`).
 */
export async function sendFlushBatch(db: D1Database, statements: D1PreparedStatement[], hooks: SqlCondition | null): Promise<boolean> {
	const all = hooks ? [...statements, db.prepare(`SELECT ${hooks.sql} AS hooks`).bind(...hooks.args)] : statements;
	const results = await db.batch(all);
	if (!hooks) return false;
	// Only the last statement selects a row; an absent row (never seen) counts as no webhook, as before.
	const row = results.at(-1)?.results[0];
	return row !== undefined && hooksRow.parse(row).hooks === 1;
}
