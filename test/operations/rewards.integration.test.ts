import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";

type Api = Awaited<ReturnType<typeof createApp>>["api"];
let nextCustomId = 1;

/** A referrer with `friends` friends who each signed up (one $10 reward per friend for the referrer). */
async function referrerWithRewards(friends: number, campaign: Record<string, unknown> = {}) {
	const app = await createApp({
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		...campaign,
	});
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friendKeys: string[] = [];
	for (let i = 0; i < friends; i++) {
		const friend = (await app.api("register", { email: `f${i}@x.com`, name: `Friend ${i}`, referrercode: referrer.referralcode })).body;
		friendKeys.push(friend.userkey);
		await signup(app.api, friend.userkey);
	}
	const rewards = await ledgerFor(env, app.appid, referrer.userkey).listRewards();
	return { ...app, referrer, friendKeys, rewards };
}

const signup = (api: Api, userkey: string) =>
	api("registerconversionevent", { userkey, eventname: "Signup", customid: String(nextCustomId++), growthhack: "SaaS_Referrals" });

const balance = async (api: Api, userkey: string, campaignid: number, extra: Record<string, unknown> = {}) =>
	(await api("getuserbalance", { userkey, campaignid: String(campaignid), ...extra })).body;

describe("getuserbalance", () => {
	it("nests unit -> growth hack -> campaign with total = pending + approved + claimed", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(3);
		const body = await balance(api, referrer.userkey, campaignid);
		expect(body.success).toBe(true);
		expect(body.userbalance).toEqual([
			{
				rewardunit: "USD",
				total: 30,
				pending: 0,
				approved: 30,
				claimed: 0,
				owed: 0,
				growthhacks: [
					{
						growthhack: "SaaS_Referrals",
						rewardunit: "USD",
						total: 30,
						pending: 0,
						approved: 30,
						claimed: 0,
						owed: 0,
						campaigns: [
							{
								campaignid,
								campaignname: "Give $10, get $10",
								growthhack: "SaaS_Referrals",
								rewardunit: "USD",
								total: 30,
								pending: 0,
								approved: 30,
								claimed: 0,
								owed: 0,
							},
						],
					},
				],
			},
		]);
	});

	it("filters by growthhack and answers an empty list for a user without rewards", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(1);
		expect((await balance(api, referrer.userkey, campaignid, { growthHack: "OtherHack" })).userbalance).toEqual([]);
		expect((await balance(api, referrer.userkey, campaignid, { growthhack: "saas_referrals" })).userbalance).toHaveLength(1);
	});

	it("is 404 for an unknown or foreign user and for a foreign campaign; 400 without campaignid", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(0);
		const other = await createApp();
		const foreignUser = (await other.api("register", { email: "o@x.com" })).body;
		expect((await api("getuserbalance", { userkey: foreignUser.userkey, campaignid })).body.errorcode).toBe("user_not_found");
		expect((await api("getuserbalance", { userkey: referrer.userkey, campaignid: other.campaignid })).body.errorcode).toBe(
			"campaign_not_found",
		);
		expect((await api("getuserbalance", { userkey: referrer.userkey })).status).toBe(400);
	});
});

describe("getuserbalance answered by the ledger alone", () => {
	it("still refuses a user of another app and a campaign of another app when the users have rewards", async () => {
		const mine = await referrerWithRewards(1);
		const theirs = await referrerWithRewards(1);
		// Their user's rewards live in the ledger of (their app, user): asked through my app, that user is unknown.
		expect((await mine.api("getuserbalance", { userkey: theirs.referrer.userkey, campaignid: mine.campaignid })).body.errorcode).toBe(
			"user_not_found",
		);
		expect((await mine.api("getuserbalance", { userkey: mine.referrer.userkey, campaignid: theirs.campaignid })).body.errorcode).toBe(
			"campaign_not_found",
		);
		expect((await mine.api("getuserbalance", { userkey: "unosuchuser000000000", campaignid: mine.campaignid })).body.errorcode).toBe(
			"user_not_found",
		);
		expect((await balance(mine.api, mine.referrer.userkey, mine.campaignid)).userbalance[0]).toMatchObject({ approved: 10 });
	});
});

describe("getfriendsandrewards", () => {
	it("lists friends newest first with their rewards, paged, with counts of the whole set", async () => {
		const { api, referrer, friendKeys } = await referrerWithRewards(5);
		const page1 = (await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 1, pagesize: 2 })).body;
		expect(page1).toMatchObject({ success: true, totalfriends: 5, convertedfriends: 0 });
		expect(page1.friends.map((f: { userkey: string }) => f.userkey)).toEqual([friendKeys[4], friendKeys[3]]);
		expect(page1.friends[0]).toMatchObject({ email: "f4@x.com", name: "Friend 4", status: "SignUp", useraccountid: "", profileimage: "" });
		expect(page1.friends[0].regdate).toMatch(/^\d{1,2}-[A-Z][a-z]{2}-\d{4}$/);
		expect(page1.friends[0].earnedrewards).toEqual([
			expect.objectContaining({
				reward: "10",
				rewardstatus: "Approved",
				usertype: "Referrer",
				friendemail: "f4@x.com",
				rewardtype: "InstoreCredits",
			}),
		]);
		const page3 = (await api("getfriendsandrewards", { userKey: referrer.userkey, pageIndex: "3", pageSize: "2" })).body;
		expect(page3.friends.map((f: { userkey: string }) => f.userkey)).toEqual([friendKeys[0]]);
		const beyond = (await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 9 })).body;
		expect(beyond).toMatchObject({ friends: [], totalfriends: 5 });
	});

	it("defaults to page 1 of 50, caps the page size at 500 and rejects page 0", async () => {
		const { api, referrer } = await referrerWithRewards(1);
		expect((await api("getfriendsandrewards", { userkey: referrer.userkey })).body).toMatchObject({ pageindex: 1, pagesize: 50 });
		expect((await api("getfriendsandrewards", { userkey: referrer.userkey, pagesize: 100000 })).body.pagesize).toBe(500);
		expect((await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 0 })).status).toBe(400);
	});

	it("requires userkey and is 404 for an unknown one", async () => {
		const { api } = await referrerWithRewards(1);
		expect((await api("getfriendsandrewards", { email: "ref@x.com", userkey: "" })).status).toBe(400);
		expect((await api("getfriendsandrewards", { userkey: "u0000000000000000000" })).status).toBe(404);
	});
});

describe("redeemrewards", () => {
	it("by amount takes the oldest approved rewards first, in part when needed", async () => {
		const { api, referrer, campaignid, rewards } = await referrerWithRewards(3);
		const res = await api("redeemrewards", { userKey: referrer.userkey, amount: "15" });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ success: true, redeemed: 15 });
		const status = async (id: string) => (await api("checkrewardstatus", { rewarddtlid: id })).body.rewardstatus;
		expect(await status(rewards[0]!.rewarddtlid)).toBe("Rewarded");
		expect(await status(rewards[1]!.rewarddtlid)).toBe("Approved");
		expect((await balance(api, referrer.userkey, campaignid)).userbalance[0]).toMatchObject({
			total: 30,
			approved: 15,
			claimed: 15,
			pending: 0,
		});
	});

	it("refuses whole an amount above the approved balance (409) and changes nothing", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(2);
		const res = await api("redeemrewards", { userkey: referrer.userkey, amount: "20.01" });
		expect(res.status).toBe(409);
		expect(res.body).toMatchObject({ success: false, errorcode: "insufficient_balance", approved: 20 });
		expect((await balance(api, referrer.userkey, campaignid)).userbalance[0]).toMatchObject({ approved: 20, claimed: 0 });
	});

	it("refuses by amount on a coupon campaign", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(0, { distribution: "Coupon" });
		const res = await api("redeemrewards", { userkey: referrer.userkey, amount: "5", campaignid: String(campaignid) });
		expect(res.status).toBe(400);
		expect(res.body.errorcode).toBe("coupon_distribution");
	});

	it("by ids is all or nothing", async () => {
		const { api, appid, referrer, campaignid, rewards } = await referrerWithRewards(3);
		await api("changerewardstatus", {
			rewardslist: [{ rewarddtlid: rewards[2]!.rewarddtlid, rewardstatus: "Suspicious", message: "check" }],
		});
		const refused = await api("redeemrewards", {
			userkey: referrer.userkey,
			rewarddtlids: [rewards[0]!.rewarddtlid, rewards[2]!.rewarddtlid],
		});
		expect(refused.status).toBe(409);
		expect(refused.body.errorcode).toBe("reward_not_redeemable");
		expect((await ledgerFor(env, appid, referrer.userkey).getReward(rewards[0]!.rewarddtlid))?.rewardstatus).toBe("Approved");
		const ok = await api("redeemrewards", { userkey: referrer.userkey, rewarddtlids: [rewards[0]!.rewarddtlid, rewards[1]!.rewarddtlid] });
		expect(ok.body).toMatchObject({ success: true, redeemed: 20 });
		expect((await balance(api, referrer.userkey, campaignid)).userbalance[0]).toMatchObject({
			total: 30,
			pending: 10,
			approved: 0,
			claimed: 20,
		});
	});

	it("never overdraws under 20 concurrent redeems", async () => {
		const { api, referrer, campaignid } = await referrerWithRewards(5); // 50 approved
		const results = await Promise.all(Array.from({ length: 20 }, () => api("redeemrewards", { userkey: referrer.userkey, amount: "7" })));
		const succeeded = results.filter((r) => r.status === 200).length;
		expect(succeeded).toBe(7); // 7 x 7 = 49 <= 50 < 56
		expect(results.filter((r) => r.status === 409)).toHaveLength(13);
		expect((await balance(api, referrer.userkey, campaignid)).userbalance[0]).toMatchObject({ total: 50, approved: 1, claimed: 49 });
	});

	it("requires amount or rewarddtlids and a positive amount", async () => {
		const { api, referrer } = await referrerWithRewards(0);
		expect((await api("redeemrewards", { userkey: referrer.userkey })).status).toBe(400);
		expect((await api("redeemrewards", { userkey: referrer.userkey, amount: "0" })).status).toBe(400);
		expect((await api("redeemrewards", { userkey: referrer.userkey, amount: "abc" })).status).toBe(400);
	});
});

describe("changerewardstatus and checkrewardstatus", () => {
	it("accepts 'Under Review' and answers UnderReview with the message as comment", async () => {
		const { api, rewards } = await referrerWithRewards(1);
		const id = rewards[0]!.rewarddtlid;
		const res = await api("changerewardstatus", {
			rewardsList: [{ rewardDtlId: id, rewardStatus: "Under Review", message: "Checking+order" }],
		});
		expect(res.status).toBe(200);
		const check = await api("checkrewardstatus", { rewarddtlid: id });
		expect(check.body).toMatchObject({ success: true, rewarddtlid: id, rewardstatus: "UnderReview", comment: "Checking order" });
	});

	it("applies none when one entry fails, across users too", async () => {
		const a = await referrerWithRewards(2);
		const friendReward = (await ledgerFor(env, a.appid, a.friendKeys[0]!).listRewards())[0];
		expect(friendReward).toBeUndefined(); // the campaign only rewards referrers
		await a.api("redeemrewards", { userkey: a.referrer.userkey, rewarddtlids: [a.rewards[1]!.rewarddtlid] });
		const res = await a.api("changerewardstatus", {
			rewardslist: [
				{ rewarddtlid: a.rewards[0]!.rewarddtlid, rewardstatus: "Rejected" },
				{ rewarddtlid: a.rewards[1]!.rewarddtlid, rewardstatus: "Approved" }, // Rewarded: cannot change
			],
		});
		expect(res.status).toBe(409);
		expect(res.body.errorcode).toBe("invalid_status_transition");
		expect((await a.api("checkrewardstatus", { rewarddtlid: a.rewards[0]!.rewarddtlid })).body.rewardstatus).toBe("Approved");
	});

	it("refuses Rewarded by hand, an unknown status and an empty list", async () => {
		const { api, rewards } = await referrerWithRewards(1);
		for (const rewardslist of [
			[{ rewarddtlid: rewards[0]!.rewarddtlid, rewardstatus: "Rewarded" }],
			[{ rewarddtlid: rewards[0]!.rewarddtlid, rewardstatus: "Paid" }],
			[],
		]) {
			const res = await api("changerewardstatus", { rewardslist });
			expect(res.status).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
		}
	});

	it("is 404 for another app's reward and for ids that are not reward ids", async () => {
		const mine = await referrerWithRewards(0);
		const theirs = await referrerWithRewards(1);
		const foreignId = theirs.rewards[0]!.rewarddtlid;
		expect((await mine.api("checkrewardstatus", { rewarddtlid: foreignId })).body.errorcode).toBe("reward_not_found");
		const change = await mine.api("changerewardstatus", { rewardslist: [{ rewarddtlid: foreignId, rewardstatus: "Rejected" }] });
		expect(change.status).toBe(404);
		expect((await theirs.api("checkrewardstatus", { rewarddtlid: foreignId })).body.rewardstatus).toBe("Approved");
		for (const rewarddtlid of ["12345", "nonsense", `${theirs.referrer.userkey}-99`]) {
			expect((await theirs.api("checkrewardstatus", { rewarddtlid })).status).toBe(404);
		}
	});
});
