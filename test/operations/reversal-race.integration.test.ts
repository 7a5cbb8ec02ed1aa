import { describe, expect, it } from "vitest";
import { mulberry32 } from "../ledger/support";
import { purchaseReferral } from "./reversal-support";

/**
 * Refunds raced against each other and against redemptions, with real
 * requests through the Worker (start offsets from fixed seeds). Whatever the
 * interleaving, a refund applies once, the running total never exceeds the
 * transaction value, and what a refund took back is never spent.
 */
const delay = (random: () => number, max: number) => new Promise((r) => setTimeout(r, Math.floor(random() * max)));

describe("reverseconversionevent under concurrency", () => {
	it("two concurrent full reversals of one event reverse it once", async () => {
		const ctx = await purchaseReferral();
		const referrer = ctx.referrer.userkey;
		const customid = await ctx.purchase(200);
		// 15 redeemed first, so reversing twice would also show as a doubled clawback.
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "15" })).status).toBe(200);
		const [a, b] = await Promise.all([ctx.reverse({ customid, reason: "a" }), ctx.reverse({ customid, reason: "b" })]);
		expect([a.status, b.status]).toEqual([200, 200]);
		expect([a.body.duplicate, b.body.duplicate].sort()).toEqual([false, true]);
		expect((await ctx.rewardsOf(referrer, customid)).map((r) => [r.rewardstatus, r.reversedamount, r.version])).toEqual([
			["Rejected", "10", 3],
			["Rejected", "20", 3],
		]);
		expect((await ctx.ledger(referrer).listClawbacks()).map((c) => c.amount)).toEqual([1000, 500]);
		expect(await ctx.balance(referrer)).toEqual({ total: 0, pending: 0, approved: 0, claimed: 0, owed: 15 });
		expect((await ctx.rewardsOf(ctx.friend.userkey, customid)).map((r) => [r.rewardstatus, r.version])).toEqual([["Rejected", 2]]);
	}, 60_000);

	it("concurrent partial refunds never add up beyond the transaction value", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(100);
		const results = await Promise.all([60, 60, 60].map((v) => ctx.reverse({ customid, refundvalue: v })));
		const statuses = results.map((r) => r.status).sort();
		expect(statuses).toEqual([200, 409, 409]);
		for (const r of results.filter((x) => x.status === 409)) expect(r.body.errorcode).toBe("refund_exceeds_transaction");
		// 10 % of 100 = 10, 60 % of it taken back once.
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid)).map((r) => [r.reward, r.reversedamount])).toEqual([
			["10", "0"],
			["4", "6"],
		]);
		expect((await ctx.reverse({ customid, refundvalue: 40 })).body).toMatchObject({ refunded: 100, full: true });
	}, 60_000);

	for (const seed of [7, 42, 1234]) {
		it(`a reversal racing redemptions never lets the user spend what it took back (seed ${seed})`, async () => {
			const random = mulberry32(seed);
			const ctx = await purchaseReferral();
			const referrer = ctx.referrer.userkey;
			// The event to refund earns 10 + 20 (oldest, so redemptions reach it first); a later one 10 + 5.
			const refunded = await ctx.purchase(200);
			await ctx.purchase(50);
			const [reversal, ...redeems] = await Promise.all([
				delay(random, 40).then(() => ctx.reverse({ customid: refunded })),
				...Array.from({ length: 16 }, () => delay(random, 80).then(() => ctx.api("redeemrewards", { userkey: referrer, amount: "2.5" }))),
			]);
			expect(reversal.status).toBe(200);
			for (const r of redeems) {
				expect([200, 409]).toContain(r.status);
				if (r.status === 409) expect(["insufficient_balance", "reward_locked"]).toContain(r.body.errorcode);
			}
			const spent = redeems.filter((r) => r.status === 200).length * 250;

			// What the refund found redeemed stayed exactly that: nothing was redeemed from them after it.
			const reported = reversal.body.rewards.filter((r: any) => r.userkey === referrer);
			const after = await ctx.rewardsOf(referrer, refunded);
			expect(after.map((r) => r.redeemed)).toEqual(reported.map((r: any) => r.before.redeemed));
			expect(after.map((r) => r.rewardstatus)).toEqual(["Rejected", "Rejected"]);
			const owedAtReversal = Math.round(reported.reduce((a: number, r: any) => a + r.clawback, 0) * 100);
			expect(owedAtReversal).toBe(Math.round(reported.reduce((a: number, r: any) => a + r.before.redeemed, 0) * 100));

			// The books: the later event's 15 is all the user is entitled to; what was spent beyond it is owed.
			const b = await ctx.balance(referrer);
			const cents = (n: number) => Math.round(n * 100);
			expect(cents(b.total)).toBe(1500);
			expect(cents(b.claimed) + cents(b.owed)).toBe(spent);
			expect(cents(b.claimed)).toBe(Math.min(spent, 1500));
			expect(cents(b.approved)).toBe(1500 - Math.min(spent, 1500));
			if (b.owed > 0) expect(b.approved).toBe(0);
			const clawbacks = await ctx.ledger(referrer).listClawbacks();
			expect(clawbacks.reduce((a, c) => a + c.amount, 0)).toBe(owedAtReversal);
		}, 60_000);
	}
});
