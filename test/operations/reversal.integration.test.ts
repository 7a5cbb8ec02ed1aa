import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { request } from "../support/api";
import { projectionRows } from "../support/layout";
import { until } from "../support/until";
import { purchaseReferral } from "./reversal-support";

const versions = async (ctx: Awaited<ReturnType<typeof purchaseReferral>>) =>
	[...(await ctx.ledger(ctx.referrer.userkey).listRewards()), ...(await ctx.ledger(ctx.friend.userkey).listRewards())].map((r) => [
		r.rewarddtlid,
		r.version,
	]);

async function outboxTypes(appid: string) {
	const rows = await env.DB.prepare("SELECT type, payload FROM outbox_events WHERE appid = ? ORDER BY created_at")
		.bind(appid)
		.all<{ type: string; payload: string }>();
	return rows.results.map((r) => ({ type: r.type, data: JSON.parse(r.payload) as Record<string, any> }));
}

describe("reverseconversionevent: full and partial reversals", () => {
	it("a full reversal reverses every reward in every ledger; a second one changes nothing; the friend stays Converted", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		const res = await ctx.reverse({ customid, reason: "Refunded+order+42" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({
			success: true,
			customid,
			full: true,
			refunded: 200,
			refundvalue: 200,
			transactionvalue: 200,
			duplicate: false,
		});
		expect(res.body.rewards).toHaveLength(3);

		const referrerRewards = await ctx.rewardsOf(ctx.referrer.userkey, customid);
		expect(referrerRewards.map((r) => [r.rewardstatus, r.reward, r.reversed, r.reversedamount, r.comment])).toEqual([
			["Rejected", "0", true, "10", "Refunded order 42"],
			["Rejected", "0", true, "20", "Refunded order 42"],
		]);
		expect((await ctx.rewardsOf(ctx.friend.userkey, customid)).map((r) => [r.rewardstatus, r.reversedamount])).toEqual([["Rejected", "5"]]);
		expect(await ctx.balance(ctx.referrer.userkey)).toEqual({ total: 0, pending: 0, approved: 0, claimed: 0, owed: 0 });
		expect(await ctx.balance(ctx.friend.userkey)).toEqual({ total: 0, pending: 0, approved: 0, claimed: 0, owed: 0 });

		const before = await versions(ctx);
		const again = await ctx.reverse({ customid });
		expect(again.status).toBe(200);
		expect(again.body.duplicate).toBe(true);
		expect(await versions(ctx)).toEqual(before);

		// The friend's status in D1 follows the projection of its event (issue 49).
		const friends = await until(
			"the friend converted",
			async () => (await ctx.api("getfriendsandrewards", { userkey: ctx.referrer.userkey })).body,
			(page) => page.friends[0].status === "Converted",
		);
		expect(friends.friends[0].status).toBe("Converted");
		expect(friends.convertedfriends).toBe(1);
		const listed = friends.friends[0].rewards ?? friends.rewards;
		expect(JSON.stringify(listed ?? friends)).toContain('"reversedamount":"20"');
	});

	it("one limit for transactionvalue: the largest value accepted can be refunded in part; above it is 400", async () => {
		const ctx = await purchaseReferral({
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%", maxrewardamount: 1000 }],
		});
		const tooLarge = await ctx.api("registerconversionevent", {
			userkey: ctx.friend.userkey,
			eventname: "Purchase",
			customid: "1",
			transactionvalue: "500000000000",
			growthhack: "SaaS_Referrals",
		});
		expect(tooLarge.status).toBe(400);
		expect(tooLarge.body).toMatchObject({ errorcode: "validation_failed", fields: ["transactionvalue"] });
		expect(tooLarge.body.message).toContain("100000000000");
		const customid = await ctx.purchase(100_000_000_000);
		const part = await ctx.reverse({ customid, refundvalue: "1000000000" });
		expect(part.status).toBe(200);
		expect(part.body).toMatchObject({ refundvalue: 1_000_000_000, refunded: 1_000_000_000, full: false });
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid)).map((r) => [r.reward, r.reversedamount])).toEqual([["990", "10"]]);
	});

	it("a partial refund reduces percent rewards in proportion and leaves fixed ones; partial refunds add up", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		const first = await ctx.reverse({ customid, refundvalue: "50" });
		expect(first.status).toBe(200);
		expect(first.body).toMatchObject({ refundvalue: 50, refunded: 50, full: false });
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid)).map((r) => [r.rewardstatus, r.reward, r.reversedamount])).toEqual([
			["Approved", "10", "0"],
			["Approved", "15", "5"],
		]);
		expect((await ctx.rewardsOf(ctx.friend.userkey, customid)).map((r) => [r.rewardstatus, r.reward])).toEqual([["Approved", "5"]]);
		expect(await ctx.balance(ctx.referrer.userkey)).toEqual({ total: 25, pending: 0, approved: 25, claimed: 0, owed: 0 });

		// 33.33 more: 20 * 83.33 / 200 = 8.333 -> 8.33 taken in total; the rounding is on the running total.
		expect((await ctx.reverse({ customid, refundvalue: 33.33 })).body).toMatchObject({ refunded: 83.33, full: false });
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid))[1]).toMatchObject({ reward: "11.67", reversedamount: "8.33" });

		const rest = await ctx.reverse({ customid, refundvalue: "116.67" });
		expect(rest.body).toMatchObject({ refunded: 200, full: true });
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid)).map((r) => r.rewardstatus)).toEqual(["Rejected", "Rejected"]);
		expect((await ctx.rewardsOf(ctx.friend.userkey, customid)).map((r) => r.rewardstatus)).toEqual(["Rejected"]);
		expect(await ctx.balance(ctx.referrer.userkey)).toEqual({ total: 0, pending: 0, approved: 0, claimed: 0, owed: 0 });
		// A full reversal now has nothing left to do.
		expect((await ctx.reverse({ customid })).body).toMatchObject({ success: true, duplicate: true });
	});

	it("refunding more than the transaction value is 409 refund_exceeds_transaction with nothing changed", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		const before = await versions(ctx);
		const over = await ctx.reverse({ customid, refundvalue: "200.01" });
		expect(over.status).toBe(409);
		expect(over.body).toMatchObject({ success: false, errorcode: "refund_exceeds_transaction", transactionvalue: 200, refunded: 0 });
		expect(await versions(ctx)).toEqual(before);

		expect((await ctx.reverse({ customid, refundvalue: 150 })).status).toBe(200);
		const after150 = await versions(ctx);
		const over2 = await ctx.reverse({ customid, refundvalue: 50.01 });
		expect(over2.status).toBe(409);
		expect(over2.body.refunded).toBe(150);
		expect(await versions(ctx)).toEqual(after150);
		// The refused refunds were not counted: exactly the rest can still be refunded.
		expect((await ctx.reverse({ customid, refundvalue: 50 })).body).toMatchObject({ refunded: 200, full: true });
	});

	it("an event sent without a transaction value can only be reversed whole", async () => {
		const ctx = await purchaseReferral({
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		});
		const customid = "77000001";
		await ctx.api("registerconversionevent", { userkey: ctx.friend.userkey, eventname: "Signup", customid, growthhack: "SaaS_Referrals" });
		expect((await ctx.reverse({ customid, refundvalue: 1 })).body.errorcode).toBe("refund_exceeds_transaction");
		const full = await ctx.reverse({ customid });
		expect(full.body).toMatchObject({ success: true, full: true, transactionvalue: null });
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid)).map((r) => r.rewardstatus)).toEqual(["Rejected"]);
	});

	it("reverses an event that rewarded nobody (a user without referrer): the refund is still counted", async () => {
		const ctx = await purchaseReferral();
		const loner = (await ctx.api("register", { email: "loner@x.com" })).body;
		const customid = "88000001";
		await ctx.api("registerconversionevent", {
			userkey: loner.userkey,
			eventname: "Purchase",
			customid,
			transactionvalue: "80",
			growthhack: "SaaS_Referrals",
		});
		expect((await ctx.reverse({ customid, refundvalue: 50 })).body).toMatchObject({ success: true, refunded: 50, rewards: [] });
		expect((await ctx.reverse({ customid, refundvalue: 31 })).body.errorcode).toBe("refund_exceeds_transaction");
		expect((await ctx.reverse({ customid })).body).toMatchObject({ success: true, refundvalue: 30, refunded: 80, full: true });
	});

	it("answers 404 event_not_found for an unknown customid or another growth hack, 400 for bad input", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(100);
		expect((await ctx.reverse({ customid: "987654321" })).body).toMatchObject({ errorcode: "event_not_found" });
		expect((await ctx.reverse({ customid: "987654321" })).status).toBe(404);
		expect((await ctx.reverse({ customid, growthHack: "Other" })).status).toBe(404);
		// Order ids are text (docs/api.md): an unknown one is not found, not refused.
		expect((await ctx.reverse({ customid: "abc" })).status).toBe(404);
		expect((await ctx.reverse({ customid, growthHack: "saas_referrals", refundvalue: 1 })).status).toBe(200);
		for (const bad of [
			{},
			{ customid: "" },
			{ customid: "x".repeat(101) },
			{ customid, refundvalue: "-1" },
			{ customid, refundvalue: 0 },
			{ customid, refundvalue: "1.001" },
		]) {
			const res = await ctx.reverse(bad);
			expect(res.status).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
		}
		// Another app's event is unknown here.
		const other = await purchaseReferral();
		expect((await other.reverse({ customid })).status).toBe(404);
	});

	it("is idempotent per refund: the same refundid or Idempotency-Key applies once", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		expect((await ctx.reverse({ customid, refundvalue: 20, refundid: "re_1" })).body.duplicate).toBe(false);
		const repeat = await ctx.reverse({ customid, refundvalue: 20, refundid: "re_1" });
		expect(repeat.body).toMatchObject({ success: true, duplicate: true, refunded: 20 });
		expect((await ctx.reverse({ customid, refundvalue: 30, refundid: "re_1" })).body.errorcode).toBe("refundid_reused");

		const send = () =>
			request("/saas/v1_0/reverseconversionevent", {
				method: "POST",
				headers: { "content-type": "application/json", "Idempotency-Key": `refund-${customid}-2` },
				body: JSON.stringify({ apikey: ctx.apikey, privatekey: ctx.privatekey, customid, refundvalue: "40" }),
			});
		const a = await send();
		const b = await send();
		expect(a.status).toBe(200);
		expect(b.headers.get("Idempotent-Replayed")).toBe("true");
		expect(((await b.json()) as Record<string, unknown>).refunded).toBe(60);
		// Without a key or refundid, each call is a new refund.
		expect((await ctx.reverse({ customid, refundvalue: 40 })).body.refunded).toBe(100);
		expect((await ctx.rewardsOf(ctx.referrer.userkey, customid))[1]?.reversedamount).toBe("10");
	});

	it("sends conversion.reversed with each reward's before and after, and reward.reversed per reward", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(200);
		await ctx.reverse({ customid, refundvalue: 100, reason: "partial" });
		await ctx.reverse({ customid, refundvalue: 100, reason: "partial" });
		await ctx.ledger(ctx.referrer.userkey).flush();
		await ctx.ledger(ctx.friend.userkey).flush();
		const events = await outboxTypes(ctx.appid);
		const reversed = events.filter((e) => e.type === "conversion.reversed");
		expect(reversed).toHaveLength(2);
		expect(reversed[1]?.data).toMatchObject({ customid, refundvalue: 100, refunded: 200, full: true, reason: "partial" });
		expect(reversed[0]?.data.rewards).toEqual([
			expect.objectContaining({
				userkey: ctx.referrer.userkey,
				before: { rewardstatus: "Approved", reward: 20, reversedamount: 0, redeemed: 0 },
				after: { rewardstatus: "Approved", reward: 10, reversedamount: 10, redeemed: 0 },
				reversedamount: 10,
				clawback: 0,
			}),
		]);
		expect(reversed[1]?.data.rewards).toHaveLength(3);
		// The D1 read projection follows: what the reward is worth now, and its status.
		const projected = await projectionRows<{ reward: number; rewardstatus: string }>(
			"SELECT reward, rewardstatus FROM rewards WHERE userkey = ? ORDER BY rewarddtlid",
			ctx.referrer.userkey,
		);
		expect(projected).toEqual([
			{ reward: 0, rewardstatus: "Rejected" },
			{ reward: 0, rewardstatus: "Rejected" },
		]);
		const perReward = events.filter((e) => e.type === "reward.reversed");
		expect(perReward).toHaveLength(4);
		expect(perReward.map((e) => e.data)).toContainEqual(
			expect.objectContaining({
				previousstatus: "Approved",
				customid,
				reversedamount: 5,
				reward: expect.objectContaining({ rewardstatus: "Rejected", reversed: true, reversedamount: "5", reward: "0" }),
			}),
		);
	});
});

describe("reverseconversionevent: clawbacks", () => {
	it("after a partial redemption: the redeemed part is owed, never redeemable, and paid off by the next approved rewards", async () => {
		const ctx = await purchaseReferral();
		const referrer = ctx.referrer.userkey;
		const customid = await ctx.purchase(200);
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "15" })).status).toBe(200);
		const res = await ctx.reverse({ customid });
		expect(res.body.rewards.filter((r: any) => r.userkey === referrer).map((r: any) => r.clawback)).toEqual([10, 5]);
		expect(await ctx.balance(referrer)).toEqual({ total: 0, pending: 0, approved: 0, claimed: 0, owed: 15 });
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "0.01" })).body.errorcode).toBe("insufficient_balance");
		const clawbacks = await ctx.ledger(referrer).listClawbacks();
		expect(clawbacks.map((c) => [c.amount, c.paid])).toEqual([
			[1000, 0],
			[500, 0],
		]);

		// The next purchase earns 10 + 10 % of 100 = 20: 15 pays the debt first, 5 is left to redeem.
		const next = await ctx.purchase(100);
		expect(await ctx.balance(referrer)).toEqual({ total: 20, pending: 0, approved: 5, claimed: 15, owed: 0 });
		expect((await ctx.ledger(referrer).listClawbacks()).map((c) => c.amount - c.paid)).toEqual([0, 0]);
		expect((await ctx.rewardsOf(referrer, next)).map((r) => [r.rewardstatus, r.settled])).toEqual([
			["Rewarded", 10],
			["Approved", 5],
		]);
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "5.01" })).status).toBe(409);
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "5" })).status).toBe(200);
		expect(await ctx.balance(referrer)).toEqual({ total: 20, pending: 0, approved: 0, claimed: 20, owed: 0 });
	});

	it("after a full redemption: a partial refund leaves a debt that a reward under review pays only once approved", async () => {
		const ctx = await purchaseReferral({ autoapprove: false });
		const referrer = ctx.referrer.userkey;
		const approveAll = async (customid: string) => {
			const rewards = await ctx.rewardsOf(referrer, customid);
			const res = await ctx.api("changerewardstatus", {
				rewardslist: rewards.map((r) => ({ rewarddtlid: r.rewarddtlid, rewardstatus: "Approved" })),
			});
			expect(res.status).toBe(200);
			return rewards;
		};
		const customid = await ctx.purchase(200);
		await approveAll(customid);
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "30" })).status).toBe(200);
		// Half refunded: the 20 % reward is worth 10 now, but 20 of it was redeemed: 10 owed; the fixed reward stays.
		await ctx.reverse({ customid, refundvalue: 100 });
		expect((await ctx.rewardsOf(referrer, customid)).map((r) => [r.rewardstatus, r.reward, r.redeemed])).toEqual([
			["Rewarded", "10", 10],
			["Rewarded", "10", 20],
		]);
		expect(await ctx.balance(referrer)).toEqual({ total: 20, pending: 0, approved: 0, claimed: 20, owed: 10 });

		const next = await ctx.purchase(50);
		expect(await ctx.balance(referrer)).toEqual({ total: 35, pending: 15, approved: 0, claimed: 20, owed: 10 });
		expect((await ctx.api("redeemrewards", { userkey: referrer, amount: "0.01" })).status).toBe(409);
		const [fixed, percent] = await ctx.rewardsOf(referrer, next);
		await ctx.api("changerewardstatus", { rewardslist: [{ rewarddtlid: fixed!.rewarddtlid, rewardstatus: "Approved" }] });
		expect(await ctx.balance(referrer)).toEqual({ total: 35, pending: 5, approved: 0, claimed: 30, owed: 0 });
		await ctx.api("changerewardstatus", { rewardslist: [{ rewarddtlid: percent!.rewarddtlid, rewardstatus: "Approved" }] });
		expect(await ctx.balance(referrer)).toEqual({ total: 35, pending: 0, approved: 5, claimed: 30, owed: 0 });
	});

	it("a fully reversed reward cannot be approved again by hand", async () => {
		const ctx = await purchaseReferral();
		const customid = await ctx.purchase(100);
		await ctx.reverse({ customid });
		const [reward] = await ctx.rewardsOf(ctx.referrer.userkey, customid);
		const res = await ctx.api("changerewardstatus", { rewardslist: [{ rewarddtlid: reward!.rewarddtlid, rewardstatus: "Approved" }] });
		expect(res.status).toBe(409);
		expect(res.body.errorcode).toBe("invalid_status_transition");
	});
});
