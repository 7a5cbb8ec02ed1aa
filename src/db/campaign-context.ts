import { keepCampaign, keptCampaign } from "./campaign-cache";
import { campaignWrites } from "./campaign-writes";
import { ACTIVE_RULE, type Campaign, type CampaignRow, type RewardRule, type RuleRow, toCampaign, toRule } from "./campaigns";
import { firstRowOf, rowsOf } from "./rows";

/**
 * Campaign `campaignid` with its active rules when it belongs to `campaignApp` (the app, or a test twin's live
 * app: docs/test-mode.md), else null; from the isolate's cache (campaign-cache.ts), or one D1 round trip.
 */
export async function campaignWithRules(
	db: D1Database,
	campaignApp: string,
	campaignid: number,
	nowMs = Date.now(),
): Promise<{ campaign: Campaign; rules: RewardRule[] } | null> {
	const kept = keptCampaign(campaignid, nowMs);
	if (kept) return kept.campaign.appid === campaignApp ? kept : null;
	const writesBeforeRead = campaignWrites();
	const [campaignResult, rulesResult] = await db.batch([
		db.prepare("SELECT * FROM campaigns WHERE campaignid = ?").bind(campaignid),
		db.prepare(`SELECT * FROM reward_rules WHERE campaignid = ? AND ${ACTIVE_RULE} ORDER BY position`).bind(campaignid),
	]);
	const row = firstRowOf<CampaignRow>(campaignResult);
	if (!row) return null;
	const entry = { campaign: toCampaign(row), rules: rowsOf<RuleRow>(rulesResult).map(toRule) };
	keepCampaign(campaignid, entry, nowMs, writesBeforeRead);
	return entry.campaign.appid === campaignApp ? entry : null;
}
