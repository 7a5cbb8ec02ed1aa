import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, client, createApp } from "../support/api";

/**
 * Test mode and coupon campaigns (docs/test-mode.md, "Coupon pools"): test and
 * live share a campaign, each draws from its own pool, so a reward made with
 * test keys never takes a real code, and erasing the test data frees its codes.
 */

const COUPONS = {
	distribution: "Coupon",
	rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "USD" }],
};

async function couponReward(api: ReturnType<typeof client>, appid: string, tag: string): Promise<string | null | undefined> {
	const ref = (await api("register", { email: `${tag}-ref@x.com` })).body;
	const friend = (await api("register", { email: `${tag}-friend@x.com`, referrercode: ref.referralcode })).body;
	const res = await api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Signup",
		customid: `${tag}-1`,
		growthhack: "SaaS_Referrals",
	});
	expect(res.body.success).toBe(true);
	const ledger = ledgerFor(env, appid, ref.userkey);
	await ledger.flush();
	const rewards = await ledger.listRewards();
	expect(rewards).toHaveLength(1);
	return rewards[0]!.coupon;
}

const available = async (appid: string, campaignid: number, mode = "") =>
	(await admin("GET", `/apps/${appid}/campaigns/${campaignid}${mode}`)).body.couponsavailable;

describe("coupon pools by mode", () => {
	it("a test reward takes a test code, a live reward a live code; erasing test data frees the test code", async () => {
		const app = await createApp(COUPONS);
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		const test = client({ apikey: testapikey, privatekey: testprivatekey });
		const pool = `/apps/${app.appid}/campaigns/${app.campaignid}/coupons`;
		expect((await admin("POST", pool, { coupons: [{ coupon: "LIVE-1" }, { coupon: "LIVE-2" }] })).body).toMatchObject({
			added: 2,
			couponsavailable: 2,
		});
		expect((await admin("POST", `${pool}?mode=test`, { coupons: [{ coupon: "TEST-1" }, { coupon: "LIVE-1" }] })).body).toMatchObject({
			added: 1,
			skipped: 1,
			couponsavailable: 1,
		});
		expect(await available(app.appid, app.campaignid)).toBe(2);
		expect(await available(app.appid, app.campaignid, "?mode=test")).toBe(1);

		// The test reward is granted first: with one pool it would take LIVE-1, the oldest free code.
		expect(await couponReward(test, `${app.appid}_test`, "test")).toBe("TEST-1");
		expect(await couponReward(app.api, app.appid, "live")).toBe("LIVE-1");
		expect(await available(app.appid, app.campaignid)).toBe(1);
		expect(await available(app.appid, app.campaignid, "?mode=test")).toBe(0);
		// The campaign list counts the live pool.
		const listed = (await admin("GET", `/apps/${app.appid}/campaigns`)).body.campaigns.find(
			(c: { campaignid: number }) => c.campaignid === app.campaignid,
		);
		expect(listed.couponsavailable).toBe(1);

		expect((await admin("DELETE", `/apps/${app.appid}/testdata`)).body).toMatchObject({ done: true });
		expect(await available(app.appid, app.campaignid, "?mode=test")).toBe(1);
		expect(await available(app.appid, app.campaignid)).toBe(1);
	});

	it("a test reward waits when only live codes are left", async () => {
		const app = await createApp(COUPONS);
		const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
		const test = client({ apikey: testapikey, privatekey: testprivatekey });
		await admin("POST", `/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { coupons: [{ coupon: "REAL-1" }] });
		// No code yet: the reward waits for its pool (its coupon reads empty), the live code stays free.
		expect(await couponReward(test, `${app.appid}_test`, "test")).toBe("");
		expect(await available(app.appid, app.campaignid)).toBe(1);
		expect((await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}?mode=sandbox`)).body).toMatchObject({
			errorcode: "validation_failed",
		});
	});
});
