import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CAMPAIGN_TTL_MS } from "../../src/db/campaign-cache";
import { campaignWithRules } from "../../src/db/campaign-context";
import { campaignsChanged } from "../../src/db/campaign-writes";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";

/**
 * The campaign and its active rules come from the isolate's cache on a
 * conversion's path (issue 49, piece 6: src/db/campaign-cache.ts): a miss is
 * one D1 round trip, an edit through the service applies at once, an edit
 * elsewhere within CAMPAIGN_TTL_MS, and a campaign is only ever another
 * app's when it is.
 */
describe("the campaign cache", () => {
	it("serves a campaign from the cache until its time is up, and only to its own app", async () => {
		const app = await createApp();
		const now = Date.now();
		const first = await campaignWithRules(env.DB, app.appid, app.campaignid, now);
		expect(first?.rules.map((r) => r.reward)).toEqual([10, 10]);
		// Changed behind the service's back: the cache still answers what it read, until CAMPAIGN_TTL_MS.
		await env.DB.prepare("UPDATE reward_rules SET reward = 7 WHERE campaignid = ?").bind(app.campaignid).run();
		expect((await campaignWithRules(env.DB, app.appid, app.campaignid, now + 1_000))?.rules.map((r) => r.reward)).toEqual([10, 10]);
		expect((await campaignWithRules(env.DB, app.appid, app.campaignid, now + CAMPAIGN_TTL_MS + 1))?.rules.map((r) => r.reward)).toEqual([
			7, 7,
		]);
		// Another app never gets it, from the cache or from D1.
		expect(await campaignWithRules(env.DB, "app_other", app.campaignid, now + CAMPAIGN_TTL_MS + 2)).toBeNull();
		expect(await campaignWithRules(env.DB, "app_other", app.campaignid, now + 3 * CAMPAIGN_TTL_MS)).toBeNull();
	});

	it("does not keep a read that a write in this isolate overtook", async () => {
		const app = await createApp();
		const now = Date.now();
		// The read is sent first, the edit right after it (D1 runs them in that order), and the edit counted before the read answers.
		const racing = campaignWithRules(env.DB, app.appid, app.campaignid, now);
		const edit = env.DB.prepare("UPDATE reward_rules SET reward = 7 WHERE campaignid = ?").bind(app.campaignid).run();
		campaignsChanged();
		expect((await racing)?.rules.map((r) => r.reward)).toEqual([10, 10]);
		await edit;
		expect((await campaignWithRules(env.DB, app.appid, app.campaignid, now + 1_000))?.rules.map((r) => r.reward)).toEqual([7, 7]);
	});

	it("applies a rule edited through the admin API to the next conversion at once", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "cache-ref@x.com" })).body;
		const friends = await Promise.all(
			["a", "b"].map(async (n) => (await app.api("register", { email: `cache-${n}@x.com`, referrercode: referrer.referralcode })).body),
		);
		const signup = (userkey: string, customid: string) =>
			app.api("registerconversionevent", { userkey, eventname: "Signup", customid, growthhack: "SaaS_Referrals" });
		expect((await signup(friends[0]!.userkey, "cache-1")).status).toBe(200);
		const edited = await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, {
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 3, rewardunit: "USD" }],
		});
		expect(edited.status).toBe(200);
		expect((await signup(friends[1]!.userkey, "cache-2")).status).toBe(200);
		expect((await ledgerFor(env, app.appid, referrer.userkey).listRewards()).map((r) => r.reward).sort()).toEqual(["10", "3"]);
	});
});
