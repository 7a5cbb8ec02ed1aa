import { NEXT_OUTBOX_ID } from "./outbox-entries";
import type { RewardRow } from "./schema";
import type { CouponClaim, TxContext } from "./transaction-types";
import type { RewardStatus } from "./types";

/**
 * The coupon code of a reward (docs/rewards.md, "Coupon campaigns"). A code
 * is taken from the campaign's pool only when the reward becomes Approved
 * (at its grant, by a status change or at the end of its hold), never for a
 * Suspicious or held reward. A reward that stops being approved (rejected,
 * put back under review, fully refunded) gives its code back to the pool
 * unless the code was seen: shown by a public read (getfriendsandrewards) or
 * carried by a webhook event, after which the user or the product may hold
 * it, so it stays with the reward. Claims and releases are outbox entries
 * (outbox.ts) written in the transaction of the change that causes them;
 * at most one of the two waits per reward, since each cancels the other.
 */

/** A coupon reward holds a code in these statuses: approved, or used up as Rewarded (a refund can end it there). */
export const holdsCode = (status: RewardStatus) => status === "Approved" || status === "Rewarded";

const claimRef = (seq: number) => `coupon:${seq}`;
const releaseRef = (seq: number) => `coupon_release:${seq}`;

function queueEntry(sql: SqlStorage, kind: "coupon" | "coupon_release", ref: string, claim: CouponClaim, nowMs: number): void {
	sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, ?, ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		kind,
		ref,
		JSON.stringify(claim),
		nowMs,
		new Date(nowMs).toISOString(),
	);
}

/** Records that reward `seq` needs a code from its campaign's pool. */
export function queueCouponClaim(sql: SqlStorage, claim: CouponClaim, nowMs: number): void {
	queueEntry(sql, "coupon", claimRef(claim.seq), claim, nowMs);
}

const claimOf = (ctx: TxContext, row: RewardRow): CouponClaim => ({
	seq: row.seq,
	couponKey: `${ctx.appid}:${ctx.userkey}:${row.key}`,
	campaignid: row.campaignid,
});

/** The fields of a reward that hold its code, cleared. */
const NO_CODE = { coupon: null, couponname: null, coupondetails: null, couponimage: null } as const;

/**
 * What a change of a coupon reward (`before` null: its creation) means for
 * its code, inside the change's transaction. Becoming approved queues the
 * claim and cancels a release that has not run (the claim then finds the
 * code the reward still holds in D1). Ceasing to be approved with a code
 * never seen cancels a claim that has not run, queues the release and
 * answers the patch that takes the code off the reward.
 */
export function couponTransition(ctx: TxContext, before: RewardRow | null, after: RewardRow): Partial<RewardRow> {
	if (after.rewardtype !== "Coupon") return {};
	const held = before !== null && holdsCode(before.status);
	if (holdsCode(after.status) && !held) {
		ctx.sql.exec("DELETE FROM outbox WHERE ref = ?", releaseRef(after.seq));
		if (after.coupon === null) queueCouponClaim(ctx.sql, claimOf(ctx, after), ctx.nowMs);
		return {};
	}
	if (held && !holdsCode(after.status) && after.coupon_seen_at === null) {
		ctx.sql.exec("DELETE FROM outbox WHERE ref = ?", claimRef(after.seq));
		queueEntry(ctx.sql, "coupon_release", releaseRef(after.seq), claimOf(ctx, after), ctx.nowMs);
		return NO_CODE;
	}
	return {};
}

/** Marks the codes of these rewards as seen (they are being shown outside the service); a code seen once stays seen. */
export function markCouponsSeen(sql: SqlStorage, rows: Pick<RewardRow, "seq" | "coupon" | "coupon_seen_at">[], nowMs: number): void {
	const unseen = rows.filter((r) => r.coupon !== null && r.coupon_seen_at === null).map((r) => r.seq);
	if (unseen.length === 0) return;
	sql.exec(
		"UPDATE rewards SET coupon_seen_at = ? WHERE seq IN (SELECT value FROM json_each(?)) AND coupon_seen_at IS NULL",
		new Date(nowMs).toISOString(),
		JSON.stringify(unseen),
	);
}
