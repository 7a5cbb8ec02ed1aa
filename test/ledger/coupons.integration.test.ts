import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";
import { freshLedger, grantOf } from "./support";

/**
 * Coupons are taken from the pool when a reward becomes Approved, never for
 * a Suspicious or held reward, and an approved reward rejected before its
 * code was seen gives the code back (docs/rewards.md, "Coupon campaigns").
 */

async function couponCampaign(codes: string[]) {
	const app = await createApp({ distribution: "Coupon", campaignname: "Coupons" });
	if (codes.length) {
		await env.DB.batch(codes.map((c) => env.DB.prepare("INSERT INTO coupons (campaignid, coupon) VALUES (?, ?)").bind(app.campaignid, c)));
	}
	return app;
}
const couponGrant = (campaignid: number, overrides: Parameters<typeof grantOf>[0] = {}) =>
	grantOf({ rewardtype: "Coupon", campaignid, rewardunit: "%", ...overrides });
const freeCodes = async (campaignid: number) =>
	(
		await env.DB.prepare("SELECT coupon FROM coupons WHERE campaignid = ? AND reward_key IS NULL ORDER BY coupon")
			.bind(campaignid)
			.all<{ coupon: string }>()
	).results.map((r) => r.coupon);
type Stub = ReturnType<typeof freshLedger>["stub"];
const codesOf = async (stub: Stub) => (await stub.listRewards()).map((r) => [r.rewardstatus, r.coupon]);
const outboxKinds = (stub: Stub) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql
			.exec<{ kind: string }>("SELECT kind FROM outbox WHERE kind <> 'projection' AND kind <> 'webhook' ORDER BY id")
			.toArray()
			.map((e) => e.kind),
	);

describe("coupons are assigned on approval", () => {
	it("a Suspicious or held reward takes no code; approving it by hand or at the end of its hold does", async () => {
		const { appid, campaignid } = await couponCampaign(["H1", "H2", "H3"]);
		const { userkey, stub } = freshLedger(appid);
		const later = new Date(Date.now() + 3600_000).toISOString();
		const { rewards } = await stub.grant(appid, userkey, [
			couponGrant(campaignid, { status: "Suspicious" }),
			couponGrant(campaignid, { status: "UnderReview", holdUntil: later }),
		]);
		await stub.flush();
		expect(await codesOf(stub)).toEqual([
			["Suspicious", ""],
			["UnderReview", ""],
		]);
		expect(await freeCodes(campaignid)).toEqual(["H1", "H2", "H3"]);

		expect(await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Approved", message: "checked" }])).toMatchObject({
			ok: true,
		});
		await stub.flush();
		expect(await codesOf(stub)).toEqual([
			["Approved", "H1"],
			["UnderReview", ""],
		]);

		// The hold ends: the alarm approves the reward, and only then is a code taken.
		await runInDurableObject(stub, (_l, state) =>
			state.storage.sql.exec("UPDATE rewards SET hold_until = ? WHERE seq = 2", "2000-01-01T00:00:00.000Z"),
		);
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		await stub.flush();
		expect(await codesOf(stub)).toEqual([
			["Approved", "H1"],
			["Approved", "H2"],
		]);
		expect(await freeCodes(campaignid)).toEqual(["H3"]);
	});

	it("a reward rejected after approval gives its unseen code back to the pool", async () => {
		const { appid, campaignid } = await couponCampaign(["R1"]);
		const { userkey, stub } = freshLedger(appid);
		const { rewards } = await stub.grant(appid, userkey, [couponGrant(campaignid)]);
		await stub.flush();
		expect(await codesOf(stub)).toEqual([["Approved", "R1"]]);
		expect(await freeCodes(campaignid)).toEqual([]);

		await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Rejected", message: "fraud" }]);
		await stub.flush();
		expect(await codesOf(stub)).toEqual([["Rejected", ""]]);
		expect(await freeCodes(campaignid)).toEqual(["R1"]);
		expect(await outboxKinds(stub)).toEqual([]);

		// The code serves the next approved reward.
		const other = freshLedger(appid);
		await other.stub.grant(appid, other.userkey, [couponGrant(campaignid)]);
		await other.stub.flush();
		expect(await codesOf(other.stub)).toEqual([["Approved", "R1"]]);
	});

	it("a reward rejected while its claim waits for codes takes none when they arrive", async () => {
		const { appid, campaignid } = await couponCampaign([]);
		const { userkey, stub } = freshLedger(appid);
		const { rewards } = await stub.grant(appid, userkey, [couponGrant(campaignid)]);
		await stub.flush();
		expect(await outboxKinds(stub)).toEqual(["coupon"]);
		await stub.changeStatuses([{ rewarddtlid: rewards[0]!.rewarddtlid, status: "Rejected", message: "fraud" }]);
		await env.DB.prepare("INSERT INTO coupons (campaignid, coupon) VALUES (?, 'W1')").bind(campaignid).run();
		await runInDurableObject(stub, (_l, state) => state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0"));
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		await stub.flush();
		expect(await codesOf(stub)).toEqual([["Rejected", ""]]);
		expect(await freeCodes(campaignid)).toEqual(["W1"]);
		expect(await outboxKinds(stub)).toEqual([]);
	});

	it("an erased user's waiting claim takes no code when codes arrive", async () => {
		const { appid, campaignid } = await couponCampaign([]);
		const { userkey, stub } = freshLedger(appid);
		await stub.grant(appid, userkey, [couponGrant(campaignid)]);
		await stub.flush();
		await stub.erasePerson(userkey, []);
		await env.DB.prepare("INSERT INTO coupons (campaignid, coupon) VALUES (?, 'E1')").bind(campaignid).run();
		await runInDurableObject(stub, (_l, state) => state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0"));
		await runInDurableObject(stub, (ledger) => ledger.alarm());
		expect(await codesOf(stub)).toEqual([["Approved", ""]]);
		expect(await freeCodes(campaignid)).toEqual(["E1"]);
		expect(await outboxKinds(stub)).toEqual([]);
	});

	it("rejected, then approved again before anything left: the reward keeps its code", async () => {
		const { appid, campaignid } = await couponCampaign(["K1", "K2"]);
		const { userkey, stub } = freshLedger(appid);
		const { rewards } = await stub.grant(appid, userkey, [couponGrant(campaignid)]);
		await stub.flush();
		const id = rewards[0]!.rewarddtlid;
		await stub.changeStatuses([{ rewarddtlid: id, status: "Rejected", message: "oops" }]);
		await stub.changeStatuses([{ rewarddtlid: id, status: "Approved", message: "fine after all" }]);
		await stub.flush();
		expect(await codesOf(stub)).toEqual([["Approved", "K1"]]);
		expect(await freeCodes(campaignid)).toEqual(["K2"]);
	});
});

let nextCustomId = 71_000;

describe("coupons: refunds", () => {
	const refund = (customid: string, refundid: string, refundvalue: number | null) => ({
		kind: "reverse" as const,
		customid,
		refundid,
		refundvalue,
		transactionvalue: 10_000,
		reason: null,
	});

	it("a code carried by a webhook (a partial refund's reward.reversed) is seen and stays; a full refund of an unseen one gives it back", async () => {
		const { appid, campaignid } = await couponCampaign(["P1", "P2"]);
		const { userkey, stub } = freshLedger(appid);
		await stub.grant(appid, userkey, [
			couponGrant(campaignid, { customid: "801", key: "801:1", amount: 20, percent: true }),
			couponGrant(campaignid, { customid: "802", key: "802:1", amount: 20, percent: true }),
		]);
		await stub.flush();
		expect(await codesOf(stub)).toEqual([
			["Approved", "P1"],
			["Approved", "P2"],
		]);
		// Half of 801 refunded: its reward.reversed event carries the code, so the code is seen; the full refund keeps it.
		expect(await stub.execute(refund("801", "half", 5_000))).toMatchObject({ ok: true });
		expect(await stub.execute(refund("801", "rest", null))).toMatchObject({ ok: true });
		// 802 refunded whole at once: its code was never seen, so it goes back.
		expect(await stub.execute(refund("802", "all", null))).toMatchObject({ ok: true });
		await stub.flush();
		expect(await codesOf(stub)).toEqual([
			["Rejected", "P1"],
			["Rejected", ""],
		]);
		expect(await freeCodes(campaignid)).toEqual(["P2"]);
	});
});

describe("coupons: seen codes", () => {
	/** Ann refers Bob in a coupon campaign; Bob's signup earns Ann an approved coupon reward (the friend's rule is left out). */
	async function referral(codes: string[]) {
		const app = await createApp({
			distribution: "Coupon",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		});
		await admin("POST", `/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { coupons: codes.map((coupon) => ({ coupon })) });
		const ann = (await app.api("register", { email: `ann-${crypto.randomUUID()}@example.com` })).body;
		const bob = (await app.api("register", { email: `bob-${crypto.randomUUID()}@example.com`, referrercode: ann.referralcode })).body;
		const res = await app.api("registerconversionevent", {
			userkey: bob.userkey,
			eventname: "Signup",
			customid: String(nextCustomId++),
			growthhack: "g",
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		const ledger = ledgerFor(env, app.appid, ann.userkey);
		await ledger.flush();
		const [reward] = await ledger.listRewards();
		return { app, ann, bob, ledger, reward: reward! };
	}

	it("a code shown by getfriendsandrewards stays with its reward when the reward is rejected", async () => {
		const { app, ann, ledger, reward } = await referral(["S1", "S2"]);
		expect(reward).toMatchObject({ rewardstatus: "Approved", coupon: "S1" });
		const page = await app.api("getfriendsandrewards", { userkey: ann.userkey });
		expect(page.body.friends[0].earnedrewards[0]).toMatchObject({ coupon: "S1" });

		const res = await app.api("changerewardstatus", {
			rewardslist: [{ rewarddtlid: reward.rewarddtlid, rewardstatus: "Rejected", message: "fraud" }],
		});
		expect(res.status).toBe(200);
		await ledger.flush();
		expect(await ledger.getReward(reward.rewarddtlid)).toMatchObject({ rewardstatus: "Rejected", coupon: "S1" });
		expect(await freeCodes(app.campaignid)).toEqual(["S2"]);
	});

	it("a code never shown goes back when its reward is rejected through the API", async () => {
		const { app, ledger, reward } = await referral(["N1", "N2"]);
		expect(reward).toMatchObject({ rewardstatus: "Approved", coupon: "N1" });
		await app.api("changerewardstatus", { rewardslist: [{ rewarddtlid: reward.rewarddtlid, rewardstatus: "Rejected", message: "fraud" }] });
		await ledger.flush();
		expect(await ledger.getReward(reward.rewarddtlid)).toMatchObject({ rewardstatus: "Rejected", coupon: "" });
		expect(await freeCodes(app.campaignid)).toEqual(["N1", "N2"]);
	});
});
