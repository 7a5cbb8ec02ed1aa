import { describe, expect, it } from "vitest";
import { createApp } from "../support/api";
import { conversion, flushLedger, registerUser, signIn } from "../support/dashboard";

describe("dashboard leaderboard", { timeout: 60_000 }, () => {
	it("lists referrers by rank with their emails, for the period the form asks", async () => {
		const app = await createApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const ann = await registerUser(app, { email: "ann@shop.test", name: "Ann Lee" });
		const friend = await registerUser(app, { email: "fred@shop.test", referrercode: ann.referralcode });
		await conversion(app, friend.userkey, "Purchase");
		await flushLedger(app, ann.userkey);
		const session = await signIn();
		const res = await session.get(`/dashboard/apps/${app.appid}/leaderboard?period=week`);
		expect(res.status).toBe(200);
		const html = await res.text();
		expect(html).toContain("Ann L.");
		expect(html).toContain("ann@shop.test");
		expect(html).toMatch(/<option value="week" selected/);
		expect(html).toContain('aria-current="page">Leaderboard');
		const bad = await session.get(`/dashboard/apps/${app.appid}/leaderboard?limit=500`);
		expect(bad.status).toBe(400);
		expect(await bad.text()).toContain("limit must be 1 to 100");
	});
});
