import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp, withWebhook } from "../support/api";

/**
 * A referral whose `Purchase` earns the referrer 10 USD fixed plus 10 % of
 * the transaction value, and the friend 5 USD fixed. Shared by the refund tests.
 */
export const PURCHASE_RULES = [
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%" },
	{ rewardusertype: "Friend", eventname: "Purchase", reward: 5, rewardunit: "USD" },
];

let nextCustomId = 50_000;

export async function purchaseReferral(campaign: Record<string, unknown> = {}) {
	const app = await createApp({ rewardrules: PURCHASE_RULES, ...campaign }, withWebhook());
	const referrer = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", name: "Fran", referrercode: referrer.referralcode })).body;
	const purchase = async (transactionvalue: number) => {
		const customid = String(nextCustomId++);
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid,
			transactionvalue: String(transactionvalue),
			growthhack: "SaaS_Referrals",
		});
		expect(res.status).toBe(200);
		return customid;
	};
	const reverse = (body: Record<string, unknown>) => app.api("reverseconversionevent", body);
	const ledger = (userkey: string) => ledgerFor(env, app.appid, userkey);
	/** The campaign-level numbers of a user's getuserbalance (all zero when it has none). */
	const balance = async (userkey: string) => {
		const res = await app.api("getuserbalance", { userkey, campaignid: String(app.campaignid) });
		expect(res.status).toBe(200);
		const c = res.body.userbalance[0]?.growthhacks[0]?.campaigns[0];
		return c
			? { total: c.total, pending: c.pending, approved: c.approved, claimed: c.claimed, owed: c.owed }
			: { total: 0, pending: 0, approved: 0, claimed: 0, owed: 0 };
	};
	/** The user's rewards of one event, oldest first. */
	const rewardsOf = async (userkey: string, customid: string) =>
		(await ledger(userkey).listRewards()).filter((r) => r.key.startsWith(`${customid}:`));
	return { ...app, referrer, friend, purchase, reverse, ledger, balance, rewardsOf };
}
