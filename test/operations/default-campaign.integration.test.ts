import { describe, expect, it } from "vitest";
import { admin, campaignBody, createApp } from "../support/api";

/**
 * A new campaign can go live (issue 24 item 1): register names a campaign or
 * gets the app's default, which the admin API now really sets; a campaign's
 * start and end dates bound what its events earn; new Signup rules pay once
 * per friend unless told otherwise.
 */

async function twoCampaigns() {
	const app = await createApp();
	const second = await admin("POST", `/apps/${app.appid}/campaigns`, campaignBody({ campaignname: "Winter" }));
	expect(second.status).toBe(201);
	return { ...app, second: second.body.campaignid as number };
}

describe("the default campaign", () => {
	it("PATCH defaultcampaignid makes a new campaign the one register uses; getcampaigndata says which is the default", async () => {
		const app = await twoCampaigns();
		const before = (await app.api("register", { email: "a@x.com" })).body;
		expect(before.saascampaignid).toBe(String(app.campaignid));
		const patched = await admin("PATCH", `/apps/${app.appid}`, { defaultcampaignid: app.second });
		expect(patched).toMatchObject({ status: 200, body: { defaultcampaignid: app.second } });
		const after = (await app.api("register", { email: "b@x.com" })).body;
		expect(after.saascampaignid).toBe(String(app.second));
		const data = async (campaignid: number) => (await app.api("getcampaigndata", { campaignid: String(campaignid) })).body;
		expect(await data(app.second)).toMatchObject({ isdefault: true, campaignenddate: "" });
		expect(await data(app.campaignid)).toMatchObject({ isdefault: false });
	});

	it("refuses another app's campaign or an unknown one as default, changing nothing", async () => {
		const app = await twoCampaigns();
		const other = await createApp();
		for (const id of [other.campaignid, 999_999]) {
			const res = await admin("PATCH", `/apps/${app.appid}`, { defaultcampaignid: id, name: "Renamed" });
			expect(res.status).toBe(400);
			expect(res.body.fields).toEqual(["defaultcampaignid"]);
		}
		expect((await admin("GET", `/apps/${app.appid}`)).body).toMatchObject({ defaultcampaignid: app.campaignid, name: "Test app" });
		expect((await admin("PATCH", "/apps/app_nope", { defaultcampaignid: app.second })).status).toBe(404);
	});

	it("register with campaignid joins that campaign (even when referred); an unknown one is 404 and creates nothing", async () => {
		const app = await twoCampaigns();
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		const friend = await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode, campaignid: String(app.second) });
		expect(friend.body).toMatchObject({ saascampaignid: String(app.second), hasreferrer: true });
		const unknown = await app.api("register", { email: "u@x.com", campaignid: "999999" });
		expect(unknown.status).toBe(404);
		expect(unknown.body.errorcode).toBe("campaign_not_found");
		expect((await app.api("register", { email: "u@x.com" })).body.message).toBe("User registered.");
	});
});

describe("campaign dates", () => {
	it("no rewards before the start or from the end on; the answer says why", async () => {
		const future = new Date(Date.now() + 86_400_000).toISOString();
		const past = new Date(Date.now() - 1000).toISOString();
		for (const [dates, why] of [
			[{ campaignstartdate: future }, /starts on/],
			[{ campaignenddate: past }, /ended on/],
		] as const) {
			const app = await createApp(dates);
			const referrer = (await app.api("register", { email: "r@x.com" })).body;
			const friend = (await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode })).body;
			const event = await app.api("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Signup",
				customid: "1",
				growthhack: "SaaS_Referrals",
			});
			expect(event.body).toMatchObject({ success: true, rewardscreated: 0 });
			expect(event.body.message).toMatch(why);
		}
		const app = await createApp();
		const ended = await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { campaignenddate: "2026-01-01" });
		expect(ended.body.campaignenddate).toBe("2026-01-01T00:00:00.000Z");
		expect((await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { campaignenddate: "soon" })).status).toBe(400);
	});
});

describe("Signup rules", () => {
	it("default to once per friend: a second Signup customid pays nothing; other rules and an explicit 0 stay unlimited", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "signup", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 1, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Signup", reward: 2, rewardunit: "USD", rewardfrequency: 0 },
			],
		});
		const rules = (await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body.rewardrules;
		expect(rules.map((r: { rewardfrequency: number }) => r.rewardfrequency)).toEqual([1, 0, 0]);
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		const friend = (await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode })).body;
		for (const customid of ["1", "2"]) {
			await app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Signup", customid, growthhack: "SaaS_Referrals" });
		}
		const balance = (await app.api("getuserbalance", { userkey: referrer.userkey, campaignid: String(app.campaignid) })).body;
		expect(balance.userbalance[0].total).toBe(10);
	});
});
