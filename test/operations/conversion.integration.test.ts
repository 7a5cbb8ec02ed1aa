import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { recordConversion } from "../../src/operations/conversion-work";
import { admin, createApp, withWebhook } from "../support/api";
import { until } from "../support/until";

type Api = Awaited<ReturnType<typeof createApp>>["api"];

/** An app whose campaign has the given rules, a referrer and a friend attributed to it. */
async function referral(campaign: Record<string, unknown> = {}, friendExtra: Record<string, unknown> = {}) {
	const app = await createApp(campaign, withWebhook());
	const referrer = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", name: "Fran", referrercode: referrer.referralcode, ...friendExtra }))
		.body;
	return { ...app, referrer, friend };
}

let nextCustomId = 1000;
const event = (api: Api, userkey: string, extra: Record<string, unknown> = {}) =>
	api("registerconversionevent", {
		userkey,
		eventname: "Signup",
		customid: String(nextCustomId++),
		growthhack: "SaaS_Referrals",
		...extra,
	});

const rewardsOf = (appid: string, userkey: string) => ledgerFor(env, appid, userkey).listRewards();

describe("registerconversionevent", () => {
	it("rewards the referrer and the friend by the matching rules, once", async () => {
		const { api, appid, referrer, friend } = await referral();
		const res = await event(api, friend.userkey, { extraInfo: "order%3D42" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ success: true, duplicate: false });
		const [mine, theirs] = [await rewardsOf(appid, referrer.userkey), await rewardsOf(appid, friend.userkey)];
		expect(mine).toEqual([expect.objectContaining({ usertype: "Referrer", reward: "10", rewardunit: "USD", rewardstatus: "Approved" })]);
		expect(theirs).toEqual([
			expect.objectContaining({ usertype: "Friend", reward: "10", rewardstatus: "Approved", friendemail: "friend@x.com" }),
		]);
		// D1's row of the event follows the projection (issue 49).
		const stored = await until(
			"the event in D1",
			() => env.DB.prepare("SELECT extrainfo FROM conversion_events WHERE appid = ?").bind(appid).first(),
			(row) => row !== null,
		);
		expect(stored).toEqual({ extrainfo: "order=42" });
		// conversion.recorded leaves through the friend's ledger outbox, flushed just after its write.
		await ledgerFor(env, appid, friend.userkey).flush();
		const webhook = await env.DB.prepare("SELECT payload FROM outbox_events WHERE appid = ? AND type = 'conversion.recorded'")
			.bind(appid)
			.first<{ payload: string }>();
		expect(JSON.parse(webhook?.payload ?? "{}")).toMatchObject({
			extrainfo: "order=42",
			rewards: [
				expect.objectContaining({ usertype: "Friend", rewardstatus: "Approved" }),
				expect.objectContaining({ usertype: "Referrer" }),
			],
		});
	});

	it("makes one event and one set of rewards of 20 concurrent sends of the same event", async () => {
		const { api, appid, referrer, friend } = await referral();
		const body = { userkey: friend.userkey, eventname: "Signup", customid: "777", growthhack: "SaaS_Referrals" };
		const results = await Promise.all(Array.from({ length: 20 }, () => api("registerconversionevent", body)));
		expect(results.every((r) => r.status === 200 && r.body.success === true)).toBe(true);
		expect(results.filter((r) => r.body.duplicate === false)).toHaveLength(1);
		expect(results.find((r) => r.body.duplicate)?.body.message).toMatch(/duplicate/i);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(1);
		expect(await rewardsOf(appid, friend.userkey)).toHaveLength(1);
		const events = await until(
			"the event in D1",
			() => env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(appid).first<{ n: number }>(),
			(row) => (row?.n ?? 0) > 0,
		);
		expect(events).toEqual({ n: 1 });
	});

	it("treats 007 and 7 as the same customid", async () => {
		const { api, appid, referrer, friend } = await referral();
		await api("registerconversionevent", { userkey: friend.userkey, eventname: "Signup", customid: "7", growthhack: "SaaS_Referrals" });
		const again = await api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "007",
			growthhack: "SaaS_Referrals",
		});
		expect(again.body.duplicate).toBe(true);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(1);
	});

	it("completes on retry what a call that died after recording the event left undone", async () => {
		const { api, appid, referrer, friend } = await referral();
		// The first call "dies" right after its D1 batch: the event is stored, no ledger was told.
		const recorded = await recordConversion(env, {
			appid,
			userkey: friend.userkey,
			customid: "4242",
			eventname: "Signup",
			transactionvalue: null,
			extrainfo: null,
			campaignid: null,
			growthhack: "SaaS_Referrals",
		});
		expect(recorded.isNew).toBe(true);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(0);
		const retry = await api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "4242",
			growthhack: "SaaS_Referrals",
		});
		expect(retry.body).toMatchObject({ success: true, duplicate: true });
		expect(retry.body.message).toMatch(/2 reward\(s\) it was missing were completed/);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(1);
		expect(await rewardsOf(appid, friend.userkey)).toHaveLength(1);
		const again = await api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "4242",
			growthhack: "SaaS_Referrals",
		});
		expect(again.body.message).toMatch(/no new event or reward/);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(1);
	});

	it("computes percent rewards with the cap and the minimum transaction value", async () => {
		const { api, appid, referrer, friend } = await referral({
			currency: "EUR",
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%", maxrewardamount: 15, mintranvalue: 20 },
			],
		});
		await event(api, friend.userkey, { eventname: "transaction", transactionvalue: "19.99" }); // below minimum: nothing
		await event(api, friend.userkey, { eventname: "Transaction", transactionvalue: "33.35" }); // 3.335 -> 3.34
		await event(api, friend.userkey, { eventname: "Transaction", transactionvalue: 500 }); // 50 capped to 15
		const rewards = await rewardsOf(appid, referrer.userkey);
		expect(rewards.map((r) => [r.reward, r.rewardunit])).toEqual([
			["3.34", "EUR"],
			["15", "EUR"],
		]);
	});

	it("refuses a percent event without transactionvalue, storing nothing", async () => {
		const { api, appid, friend } = await referral({
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
		});
		const res = await event(api, friend.userkey, { eventname: "Transaction" });
		expect(res.status).toBe(400);
		expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: ["transactionvalue"] });
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(appid).first()).toEqual({ n: 0 });
	});

	it("gates rules by the campaign's rewardtype", async () => {
		for (const [rewardtype, referrerCount, friendCount] of [
			[0, 0, 0],
			[1, 1, 0],
			[2, 0, 1],
			[3, 1, 1],
		]) {
			const { api, appid, referrer, friend } = await referral({ rewardtype });
			await event(api, friend.userkey);
			expect(await rewardsOf(appid, referrer.userkey), `rewardtype ${rewardtype}`).toHaveLength(referrerCount as number);
			expect(await rewardsOf(appid, friend.userkey)).toHaveLength(friendCount as number);
		}
	});

	it("rewards nobody for the events of an existing user or of a user without referrer", async () => {
		const { api, appid, referrer, friend } = await referral({}, { existinguser: true });
		await event(api, friend.userkey);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(0);
		expect(await rewardsOf(appid, friend.userkey)).toHaveLength(0);
		await event(api, referrer.userkey);
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(0);
	});

	it("limits a rule to rewardfrequency rewards per friend", async () => {
		const { api, appid, referrer, friend } = await referral({
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 2, rewardunit: "USD", rewardfrequency: 2 }],
		});
		for (let i = 0; i < 4; i++) await event(api, friend.userkey, { eventname: "Purchase" });
		expect(await rewardsOf(appid, referrer.userkey)).toHaveLength(2);
	});

	it("holds rewards under review when the campaign has hold days, and flags a self-referral as suspicious", async () => {
		const held = await referral({ holddays: 14 });
		await event(held.api, held.friend.userkey);
		expect((await rewardsOf(held.appid, held.referrer.userkey))[0]?.rewardstatus).toBe("UnderReview");
		const alias = await createApp();
		const me = (await alias.api("register", { email: "john.smith@gmail.com" })).body;
		const fake = (await alias.api("register", { email: "johnsmith+promo@gmail.com", referrercode: me.referralcode })).body;
		await event(alias.api, fake.userkey);
		const [reward] = await rewardsOf(alias.appid, me.userkey);
		expect(reward).toMatchObject({ rewardstatus: "Suspicious" });
		expect(reward?.comment).toMatch(/mailbox/);
	});

	it("moves the friend to Converted on its first event not named Signup, counted once", async () => {
		const { api, referrer, friend } = await referral();
		await event(api, friend.userkey);
		const status = async () => (await api("getfriendsandrewards", { userkey: referrer.userkey })).body;
		expect((await status()).friends[0].status).toBe("SignUp");
		await Promise.all([event(api, friend.userkey, { eventname: "Purchase" }), event(api, friend.userkey, { eventname: "Purchase" })]);
		// The friend's status in D1 follows the projection of its event (issue 49).
		const after = await until("the friend converted", status, (page) => page.friends[0].status === "Converted");
		expect(after.friends[0].status).toBe("Converted");
		expect(after.convertedfriends).toBe(1);
	});

	it("rejects bad input with field names and stores nothing", async () => {
		const { api, appid, friend } = await referral();
		const cases: [Record<string, unknown>, string][] = [
			[{ customid: "x".repeat(101) }, "customid"],
			[{ customid: "   " }, "customid"],
			[{ customid: 1.5 }, "customid"],
			[{ customid: undefined }, "customid"],
			[{ eventname: "" }, "eventname"],
			[{ growthhack: undefined }, "growthhack"],
			[{ transactionvalue: "-5" }, "transactionvalue"],
		];
		for (const [extra, field] of cases) {
			const res = await event(api, friend.userkey, extra);
			expect(res.status, field).toBe(400);
			expect(res.body.fields).toContain(field);
		}
		expect((await event(api, "u0000000000000000000")).status).toBe(404);
		expect((await event(api, friend.userkey, { campaignid: "999999" })).body.errorcode).toBe("campaign_not_found");
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(appid).first()).toEqual({ n: 0 });
	});

	it("gives coupon campaign rewards a code from the pool", async () => {
		const { api, appid, campaignid, referrer, friend } = await referral({ distribution: "Coupon" });
		await admin("POST", `/apps/${appid}/campaigns/${campaignid}/coupons`, {
			coupons: [{ coupon: "C-1" }, { coupon: "C-2" }, { coupon: "C-3" }],
		});
		await event(api, friend.userkey);
		await ledgerFor(env, appid, referrer.userkey).flush();
		await ledgerFor(env, appid, friend.userkey).flush();
		const codes = [...(await rewardsOf(appid, referrer.userkey)), ...(await rewardsOf(appid, friend.userkey))].map((r) => r.coupon);
		expect(codes.sort()).toEqual(expect.arrayContaining([expect.stringMatching(/^C-\d$/), expect.stringMatching(/^C-\d$/)]));
		expect(new Set(codes).size).toBe(2);
	});
});
