import { type CampaignRow, type CampaignWithDetails, type RuleRow, type SocialAction, toCampaign, toRule } from "./campaigns";

/** Every campaign of the app with its rules, social actions and free coupon count: one round trip. */
export async function listCampaignsWithDetails(
	db: D1Database,
	appid: string,
): Promise<(CampaignWithDetails & { couponsavailable: number })[]> {
	const [campaigns, rules, actions, coupons] = await db.batch<Record<string, unknown>>([
		db.prepare("SELECT * FROM campaigns WHERE appid = ? ORDER BY campaignid").bind(appid),
		db
			.prepare("SELECT r.* FROM reward_rules r JOIN campaigns c USING (campaignid) WHERE c.appid = ? ORDER BY r.campaignid, r.position")
			.bind(appid),
		db
			.prepare(
				`SELECT s.* FROM social_actions s JOIN campaigns c USING (campaignid) WHERE c.appid = ?
				 ORDER BY s.campaignid, s.displayorder, s.campaignsocialactionid`,
			)
			.bind(appid),
		db
			.prepare(
				`SELECT k.campaignid, COUNT(*) AS n FROM coupons k JOIN campaigns c USING (campaignid)
				 WHERE c.appid = ? AND k.reward_key IS NULL GROUP BY k.campaignid`,
			)
			.bind(appid),
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
