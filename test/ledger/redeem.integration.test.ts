import { describe, expect, it } from "vitest";
import { newUserKey } from "../../src/domain/ids";
import { freshLedger, grantOf } from "./support";

describe("UserLedger.redeemByAmount", () => {
	it("takes the oldest approved wallet rewards first, the last in part; fully redeemed becomes Rewarded", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [
			grantOf({ amount: 5 }),
			grantOf({ amount: 7, status: "UnderReview" }),
			grantOf({ amount: 3, rewardtype: "Coupon" }),
			grantOf({ amount: 10 }),
		]);
		const result = await stub.redeemByAmount({ amount: 8.005 });
		expect(result).toMatchObject({ ok: true, redeemed: 8.01 });
		const rewards = await stub.listRewards();
		expect(rewards.map((r) => [r.rewardstatus, r.redeemed])).toEqual([
			["Rewarded", 5],
			["UnderReview", 0],
			["Approved", 0],
			["Approved", 3.01],
		]);
		expect(rewards[0]!.rewardedAt).not.toBeNull();
		expect((await stub.balance({}))[0]).toMatchObject({ total: 25, pending: 7, approved: 9.99, claimed: 8.01 });
	});

	it("refuses more than is available, whole, and reports what is", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ amount: 5 }), grantOf({ amount: 5 })]);
		const result = await stub.redeemByAmount({ amount: 10.01 });
		expect(result).toEqual({ ok: false, error: expect.objectContaining({ code: "insufficient_balance", approved: 10 }) });
		expect((await stub.listRewards()).every((r) => r.redeemed === 0)).toBe(true);
	});

	it("refuses amounts that are not above 0", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ amount: 5 })]);
		for (const amount of [0, -1, 0.004, Number.NaN]) {
			expect(await stub.redeemByAmount({ amount })).toMatchObject({ ok: false, error: { code: "invalid_amount" } });
		}
	});

	it("filters by campaign, growth hack (case-insensitive) and unit", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [
			grantOf({ amount: 5, campaignid: 1 }),
			grantOf({ amount: 6, campaignid: 2 }),
			grantOf({ amount: 7, campaignid: 2, growthhack: "Other" }),
			grantOf({ amount: 8, campaignid: 2, rewardunit: "points" }),
		]);
		expect(await stub.redeemByAmount({ amount: 7, campaignid: 1 })).toMatchObject({ ok: false, error: { approved: 5 } });
		expect(await stub.redeemByAmount({ amount: 6, campaignid: 2, growthhack: "saas_referrals", rewardunit: "USD" })).toMatchObject({
			ok: true,
		});
		const byCampaign = await stub.balance({ campaignid: 2 });
		expect(byCampaign.map((u) => [u.rewardunit, u.approved, u.claimed])).toEqual([
			["USD", 7, 6],
			["points", 8, 0],
		]);
		expect((await stub.balance({ growthhack: "other" })).map((u) => u.total)).toEqual([7]);
	});

	it("20 concurrent redemptions never overdraw", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf({ amount: 10 }), grantOf({ amount: 15.5 }), grantOf({ amount: 4.5 })]);
		const results = await Promise.all(Array.from({ length: 20 }, (_, i) => stub.redeemByAmount({ amount: 2 + (i % 3) })));
		const redeemed = results.reduce((sum, r) => sum + (r.ok ? r.redeemed : 0), 0);
		expect(redeemed).toBeLessThanOrEqual(30);
		// Some must be refused: 20 calls ask for 59 in total.
		expect(results.some((r) => !r.ok && r.error.code === "insufficient_balance")).toBe(true);
		const [usd] = await stub.balance({});
		expect(usd!.claimed).toBeCloseTo(redeemed, 10);
		expect(usd!.approved).toBeGreaterThanOrEqual(0);
		expect(usd!.approved + usd!.claimed).toBeCloseTo(30, 10);
		for (const r of await stub.listRewards()) expect(r.redeemed).toBeLessThanOrEqual(r.amount);
	});
});

describe("UserLedger.redeemByIds", () => {
	it("redeems each one's remaining amount, all or nothing", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [
			grantOf({ amount: 5 }),
			grantOf({ amount: 6 }),
			grantOf({ amount: 7, status: "UnderReview" }),
			grantOf({ amount: 8, rewardtype: "Coupon" }),
		]);
		const [a, b, review, coupon] = rewards.map((r) => r.rewarddtlid) as [string, string, string, string];
		await stub.redeemByAmount({ amount: 2 });
		expect(await stub.redeemByIds([a, review])).toMatchObject({ ok: false, error: { code: "reward_not_redeemable", rewarddtlid: review } });
		expect(await stub.redeemByIds([a, coupon])).toMatchObject({ ok: false, error: { code: "reward_not_redeemable", rewarddtlid: coupon } });
		const foreign = `${newUserKey()}-1`;
		expect(await stub.redeemByIds([a, foreign])).toMatchObject({ ok: false, error: { code: "reward_not_found", rewarddtlid: foreign } });
		expect((await stub.getReward(a))?.redeemed).toBe(2);

		const ok = await stub.redeemByIds([a, b, a]);
		expect(ok).toMatchObject({ ok: true, redeemed: 9, rewards: [{ rewardstatus: "Rewarded" }, { rewardstatus: "Rewarded" }] });
		expect(await stub.redeemByIds([a])).toMatchObject({ ok: false, error: { code: "reward_not_redeemable", rewarddtlid: a } });
		expect((await stub.balance({}))[0]).toMatchObject({ total: 26, pending: 7, approved: 8, claimed: 11 });
	});

	it("concurrent redemptions of the same id pay it once", async () => {
		const { appid, userkey, stub } = freshLedger();
		const { rewards } = await stub.grant(appid, userkey, [grantOf({ amount: 5 })]);
		const id = rewards[0]!.rewarddtlid;
		const results = await Promise.all(Array.from({ length: 10 }, () => stub.redeemByIds([id])));
		expect(results.filter((r) => r.ok)).toHaveLength(1);
		expect((await stub.balance({}))[0]).toMatchObject({ claimed: 5, approved: 0 });
	});
});
