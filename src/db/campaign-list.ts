import { type CampaignRow, type CampaignWithDetails, type RuleRow, type SocialAction, toCampaign, toRule } from "./campaigns";

/**
 * One page of the app's campaigns (by campaignid, after `after`) with their rules, social actions and free
 * coupon count: one round trip.
 */
export async function listCampaignsWithDetails(
	db: D1Database,
	appid: string,
	limit: number,
	after = 0,
): Promise<(CampaignWithDetails & { couponsavailable: number })[]> {
	const page = "SELECT campaignid FROM campaigns WHERE appid = ?1 AND campaignid > ?2 ORDER BY campaignid LIMIT ?3";
	const [campaigns, rules, actions, coupons] = await db.batch<Record<string, unknown>>([
		db.prepare("SELECT * FROM campaigns WHERE appid = ?1 AND campaignid > ?2 ORDER BY campaignid LIMIT ?3").bind(appid, after, limit),
		db
			.prepare(`SELECT r.* FROM reward_rules r WHERE r.campaignid IN (${page}) ORDER BY r.campaignid, r.position`)
			.bind(appid, after, limit),
		db
			.prepare(
				`SELECT s.* FROM social_actions s WHERE s.campaignid IN (${page})
				 ORDER BY s.campaignid, s.displayorder, s.campaignsocialactionid`,
			)
			.bind(appid, after, limit),
		db
			.prepare(
				`SELECT k.campaignid, COUNT(*) AS n FROM coupons k
				 WHERE k.campaignid IN (${page}) AND k.reward_key IS NULL GROUP BY k.campaignid`,
			)
			.bind(appid, after, limit),
	]);
	const ruleRows = (rules?.results ?? []) as unknown as RuleRow[];
	const actionRows = (actions?.results ?? []) as unknown as (SocialAction & { campaignid: number })[];
	const free = new Map(((coupons?.results ?? []) as { campaignid: number; n: number }[]).map((r) => [r.campaignid, r.n]));
	return ((campaigns?.results ?? []) as unknown as CampaignRow[]).map((row) => ({
		...toCampaign(row),
		rewardrules: ruleRows.filter((r) => r.campaignid === row.campaignid).map(toRule),
		socialactions: actionRows.filter((a) => a.campaignid === row.campaignid).map(({ campaignid: _, ...a }) => a),
		couponsavailable: free.get(row.campaignid) ?? 0,
	}));
}
