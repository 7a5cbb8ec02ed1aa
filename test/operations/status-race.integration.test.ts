import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { mulberry32 } from "../ledger/support";
import { createApp } from "../support/api";

/**
 * decisions.md §4: changerewardstatus across users is all or none, whatever
 * runs at the same time. A partial redemption of the friend's reward makes
 * "Rejected" invalid for it; raced against a change that rejects both the
 * friend's and the referrer's reward, either both are rejected or neither.
 * Real requests through the Worker, start offsets from fixed seeds.
 */
describe("changerewardstatus racing a redemption", () => {
	for (const seed of [7, 42, 1234]) {
		it(`is never half applied (seed ${seed})`, async () => {
			const random = mulberry32(seed);
			const app = await createApp();
			const referrer = (await app.api("register", { email: "ref@x.com" })).body;
			const outcomes = { applied: 0, refused: 0 };
			for (let round = 0; round < 5; round++) {
				const friend = (await app.api("register", { email: `f${round}@x.com`, referrercode: referrer.referralcode })).body;
				await app.api("registerconversionevent", {
					userkey: friend.userkey,
					eventname: "Signup",
					customid: String(seed * 100 + round),
					growthhack: "SaaS_Referrals",
				});
				const friendReward = (await ledgerFor(env, app.appid, friend.userkey).listRewards())[0]!;
				const referrerReward = (await ledgerFor(env, app.appid, referrer.userkey).listRewards()).find(
					(r) => r.friendUserkey === friend.userkey,
				)!;
				const delay = (max: number) => new Promise((r) => setTimeout(r, Math.floor(random() * max)));
				// One change against a spray of small redemptions, so some land inside any window between phases.
				const [change, ...redeems] = await Promise.all([
					delay(10).then(() =>
						app.api("changerewardstatus", {
							rewardslist: [
								{ rewarddtlid: referrerReward.rewarddtlid, rewardstatus: "Rejected", message: "fraud" },
								{ rewarddtlid: friendReward.rewarddtlid, rewardstatus: "Rejected", message: "fraud" },
							],
						}),
					),
					...Array.from({ length: 20 }, () => delay(30).then(() => app.api("redeemrewards", { userkey: friend.userkey, amount: "0.25" }))),
				]);
				const statuses = [
					(await ledgerFor(env, app.appid, referrer.userkey).getReward(referrerReward.rewarddtlid))?.rewardstatus,
					(await ledgerFor(env, app.appid, friend.userkey).getReward(friendReward.rewarddtlid))?.rewardstatus,
				];
				if (change.status === 200) {
					outcomes.applied++;
					expect(statuses).toEqual(["Rejected", "Rejected"]);
					// A redemption before the prepare would have made "Rejected" invalid; later ones meet a lock or a Rejected reward.
					for (const redeem of redeems) expect(redeem.status).toBe(409);
				} else {
					outcomes.refused++;
					expect(change.status).toBe(409);
					expect(["invalid_status_transition", "reward_locked"]).toContain(change.body.errorcode);
					expect(statuses).toEqual(["Approved", "Approved"]);
				}
				for (const redeem of redeems) expect([200, 409]).toContain(redeem.status);
			}
			expect(outcomes.applied + outcomes.refused).toBe(5);
		}, 60_000);
	}
});
