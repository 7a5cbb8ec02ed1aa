import { describe, expect, it } from "vitest";
import { admin, campaignBody, createApp } from "../support/api";

/** One currency, one balance (issue 20 item 12): units are stored upper case; anything else is refused by the admin API. */
describe("reward units", () => {
	it("usd, USD and Usd are one unit with one balance", async () => {
		const app = await createApp({
			currency: "usd",
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "Usd" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 50, rewardunit: "points" },
			],
		});
		const campaign = (await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body;
		expect(campaign.currency).toBe("USD");
		expect(campaign.rewardrules.map((r: { rewardunit: string }) => r.rewardunit)).toEqual(["USD", "USD", "%", "POINTS"]);
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		const friend = (await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode })).body;
		const event = { userkey: friend.userkey, eventname: "Purchase", customid: "1", transactionvalue: "100", growthhack: "SaaS_Referrals" };
		expect((await app.api("registerconversionevent", event)).status).toBe(200);
		const balance = (await app.api("getuserbalance", { userkey: referrer.userkey, campaignid: String(app.campaignid) })).body;
		expect(balance.userbalance.map((u: { rewardunit: string; total: number }) => [u.rewardunit, u.total])).toEqual([["USD", 25]]);
		expect((await app.api("redeemrewards", { userkey: referrer.userkey, amount: "25", rewardunit: "USD" })).status).toBe(200);
	});

	it("a unit that is neither a currency code nor a points unit is 400 naming the field, nothing stored", async () => {
		const { appid } = await createApp();
		for (const [body, field] of [
			[{ rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "US$" }] }, "rewardrules.0.rewardunit"],
			[{ rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "1pts" }] }, "rewardrules.0.rewardunit"],
			[{ currency: "€" }, "currency"],
		] as const) {
			const res = await admin("POST", `/apps/${appid}/campaigns`, campaignBody(body));
			expect(res.status).toBe(400);
			expect(res.body.fields).toEqual([field]);
			expect(res.body.message).toContain("ISO 4217");
		}
		expect((await admin("GET", `/apps/${appid}/campaigns`)).body.campaigns).toHaveLength(1);
	});
});
