import type { App } from "../db/apps";
import { campaignWithRules } from "../db/campaign-context";
import { type EventContext, type EventInput, firstEventAt } from "../db/events";
import { sendsRewardEmail } from "../domain/messages";
import { matchingRules } from "../rewards/rules";
import { conversionParties } from "./conversion-parties";

/** The app's settings a conversion reads: from auth's cache of the app (http/auth.ts, 30 s), not from D1. */
export type ConversionApp = Pick<App, "appid" | "timezone" | "emailsender" | "webhookurl" | "campaignAppid" | "legacyEvents">;

/**
 * What deciding an event needs (issue 49: no D1 round trip when everything
 * is kept): the user and its referrer with the fraud facts from their
 * ledgers (conversion-parties.ts), the campaign (the one asked for, else the
 * user's) and its active rules from the isolate's cache (campaign-cache.ts:
 * a miss is one round trip), the app's settings from auth's cache. The
 * friend's first event of the name (recurring windows) is read from D1 only
 * when a rule of the event has a window (one indexed seek, named in
 * docs/scaling.md).
 */
export async function conversionContext(env: Env, app: ConversionApp, input: EventInput): Promise<EventContext> {
	const parties = await conversionParties(env, app.appid, input.userkey);
	if (!parties) return { ok: false, reason: "user_not_found" };
	const found = await campaignWithRules(env.DB, app.campaignAppid, input.campaignid ?? parties.user.campaignid);
	if (!found) return { ok: false, reason: "campaign_not_found" };
	const { campaign, rules } = found;
	const windowed = matchingRules(rules, input.eventname).some((r) => r.recurringmonths > 0);
	return {
		ok: true,
		...parties,
		campaign,
		rules,
		firstEventAt: windowed ? await firstEventAt(env.DB, app.appid, input.userkey, campaign.campaignid, input.eventname) : null,
		timezone: app.timezone,
		rewardemail: sendsRewardEmail(campaign.rewardemail ?? "auto", app.emailsender),
		// Both modes post to the one URL, which a test twin keeps a copy of (docs/test-mode.md).
		webhooks: (app.webhookurl ?? "") !== "",
		legacy: app.legacyEvents,
	};
}
