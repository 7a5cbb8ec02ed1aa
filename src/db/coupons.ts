import { type AuditEntry, auditStatement } from "./audit";

/**
 * A campaign's coupon pools (docs/rewards.md, "Coupon campaigns"; docs/test-mode.md, "Coupon pools"): codes
 * are added here and counted; the ledgers claim and release them (db/projection.ts).
 */

export interface CouponInput {
	coupon: string;
	couponname: string;
	coupondetails: string;
	couponimage: string;
}

/**
 * Adds codes to the campaign's pool of a mode (`livemode` false: the test pool, docs/test-mode.md); a code
 * already in either pool of the campaign is skipped. Returns how many were added.
 */
export async function addCoupons(
	db: D1Database,
	campaignid: number,
	coupons: CouponInput[],
	audit: AuditEntry,
	livemode = true,
): Promise<number> {
	const results = await db.batch([
		...coupons.map((c) =>
			db
				.prepare(
					`INSERT INTO coupons (campaignid, coupon, couponname, coupondetails, couponimage, livemode) VALUES (?, ?, ?, ?, ?, ?)
					 ON CONFLICT (campaignid, coupon) DO NOTHING`,
				)
				.bind(campaignid, c.coupon, c.couponname, c.coupondetails, c.couponimage, livemode ? 1 : 0),
		),
		auditStatement(db, audit),
	]);
	// The last result is the audit entry's.
	return results.slice(0, coupons.length).reduce((sum, r) => sum + r.meta.changes, 0);
}

/** Free codes left in the campaign's pool of a mode (the live pool unless `livemode` is false). */
export async function countFreeCoupons(db: D1Database, campaignid: number, livemode = true): Promise<number> {
	const row = await db
		.prepare("SELECT COUNT(*) AS n FROM coupons WHERE campaignid = ? AND livemode = ? AND reward_key IS NULL")
		.bind(campaignid, livemode ? 1 : 0)
		.first<{ n: number }>();
	return row?.n ?? 0;
}
