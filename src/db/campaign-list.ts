import { type CampaignRow, type CampaignWithDetails, type RuleRow, type SocialAction, toCampaign, toRule } from "./campaigns";
import { rowsOf } from "./rows";

/**
 * One page of the app's campaigns (by campaignid, after `after`) with their rules, social actions and free
 * live coupon count: one round trip.
 */
export async function listCampaignsWithDetails(
	db: D1Database,
	appid: string,
	limit: number,
	after = 0,
	/** true: archived campaigns only; false: active ones only; null: both (issue 48). */
	archived: boolean | null = null,
): Promise<(CampaignWithDetails & { couponsavailable: number })[]> {
	// The app's campaigns in id order (campaigns_app), the archived filter read on each: an app has a handful.
	const page =
		"SELECT campaignid FROM campaigns WHERE appid = ?1 AND campaignid > ?2 AND (?4 IS NULL OR (archived_at IS NOT NULL) = ?4) ORDER BY campaignid LIMIT ?3";
	const which = archived === null ? null : Number(archived);
	const [campaigns, rules, actions, coupons] = await db.batch([
		db
			.prepare(
				"SELECT * FROM campaigns WHERE appid = ?1 AND campaignid > ?2 AND (?4 IS NULL OR (archived_at IS NOT NULL) = ?4) ORDER BY campaignid LIMIT ?3",
			)
			.bind(appid, after, limit, which),
		db
			.prepare(`SELECT r.* FROM reward_rules r WHERE r.campaignid IN (${page}) ORDER BY r.campaignid, r.position`)
			.bind(appid, after, limit, which),
		db
			.prepare(
				`SELECT s.* FROM social_actions s WHERE s.campaignid IN (${page})
				 ORDER BY s.campaignid, s.displayorder, s.campaignsocialactionid`,
			)
			.bind(appid, after, limit, which),
		db
			.prepare(
				`SELECT k.campaignid, COUNT(*) AS n FROM coupons k
				 WHERE k.campaignid IN (${page}) AND k.livemode = 1 AND k.reward_key IS NULL GROUP BY k.campaignid`,
			)
			.bind(appid, after, limit, which),
	]);
	const ruleRows = rowsOf<RuleRow>(rules);
	const actionRows = rowsOf<SocialAction & { campaignid: number }>(actions);
	const free = new Map(rowsOf<{ campaignid: number; n: number }>(coupons).map((r) => [r.campaignid, r.n]));
	return rowsOf<CampaignRow>(campaigns).map((row) => ({
		...toCampaign(row),
		rewardrules: ruleRows.filter((r) => r.campaignid === row.campaignid).map(toRule),
		socialactions: actionRows.filter((a) => a.campaignid === row.campaignid).map(({ campaignid: _, ...a }) => a),
		couponsavailable: free.get(row.campaignid) ?? 0,
	}));
}
