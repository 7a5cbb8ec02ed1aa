import { campaignWrites } from "./campaign-writes";
import type { Campaign, RewardRule } from "./campaigns";

/**
 * A campaign and its active rules as a conversion reads them, kept per
 * isolate for CAMPAIGN_TTL_MS (issue 49, piece 6: the conversion's context
 * without D1, as the app's settings come from auth's cache): a miss is one
 * D1 round trip. Every write to a campaign or its rules in this isolate
 * empties the cache (db/campaigns.ts, db/campaign-archive.ts,
 * db/messages.ts), so an edit applies at once where it was made and within
 * CAMPAIGN_TTL_MS everywhere else; a decision, once made, is frozen in the
 * event's gate as before (docs/rewards.md).
 */

export const CAMPAIGN_TTL_MS = 30_000;
/** Campaigns kept per isolate: a bound on memory, whatever the number of tenants. */
const MAX_CAMPAIGNS = 1_000;

const cache = new Map<number, { campaign: Campaign; rules: RewardRule[]; until: number }>();

/** The isolate's campaign writes the cache was filled under (campaign-writes.ts): a write since empties it. */
let filledUnder = campaignWrites();

function emptiedAfterWrites(): void {
	if (filledUnder === campaignWrites()) return;
	cache.clear();
	filledUnder = campaignWrites();
}

/** What is kept of campaign `campaignid`, if it is still fresh at `nowMs` and no campaign was written since. */
export function keptCampaign(campaignid: number, nowMs: number): { campaign: Campaign; rules: RewardRule[] } | null {
	emptiedAfterWrites();
	const kept = cache.get(campaignid);
	return kept && kept.until > nowMs ? kept : null;
}

/**
 * Keeps what was read of campaign `campaignid` until `nowMs` + CAMPAIGN_TTL_MS,
 * unless a campaign was written in this isolate since `writesBeforeRead`
 * (campaignWrites() taken before the read): such a read may have answered
 * from before the write, and keeping it would serve the old campaign for 30 s
 * where the edit was made.
 */
export function keepCampaign(
	campaignid: number,
	entry: { campaign: Campaign; rules: RewardRule[] },
	nowMs: number,
	writesBeforeRead: number,
): void {
	emptiedAfterWrites();
	if (campaignWrites() !== writesBeforeRead) return;
	if (cache.size >= MAX_CAMPAIGNS) cache.delete(cache.keys().next().value ?? campaignid);
	cache.set(campaignid, { ...entry, until: nowMs + CAMPAIGN_TTL_MS });
}
