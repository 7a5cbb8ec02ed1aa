import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";

/**
 * A customid is one event of one user (issue 20, items 1 and 15): a repeat
 * for another user, event name or value is 409 customid_conflict and grants
 * nothing, whether it comes after the first or races it.
 */

type App = Awaited<ReturnType<typeof createApp>>;

/** Two referred friends, each with its own referrer. */
async function twoReferrals(app: App, round: number) {
	const pair = async (side: string) => {
		const referrer = (await app.api("register", { email: `r${side}${round}@x.com` })).body;
		const friend = (await app.api("register", { email: `f${side}${round}@x.com`, referrercode: referrer.referralcode })).body;
		return { referrer: referrer.userkey as string, friend: friend.userkey as string, email: `f${side}${round}@x.com` };
	};
	return [await pair("a"), await pair("b")] as const;
}

const conversion = (app: App, userkey: string, customid: string, extra: Record<string, unknown> = {}) =>
	app.api("registerconversionevent", { userkey, eventname: "Signup", customid, growthhack: "SaaS_Referrals", ...extra });

const rewardsOf = (app: App, userkey: string) => ledgerFor(env, app.appid, userkey).listRewards();

describe("customid: one event of one user", () => {
	it("two users racing one customid: one is recorded and paid, the other is 409 and paid nothing (10 rounds)", async () => {
		const app = await createApp();
		let rewards = 0;
		for (let round = 0; round < 10; round++) {
			const [a, b] = await twoReferrals(app, round);
			const customid = String(5000 + round);
			const answers = await Promise.all([conversion(app, a.friend, customid), conversion(app, b.friend, customid)]);
			expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
			const refused = answers.find((r) => r.status === 409)!;
			expect(refused.body).toMatchObject({ success: false, errorcode: "customid_conflict", fields: ["customid"] });
			for (const side of [a, b]) {
				const friendRewards = await rewardsOf(app, side.friend);
				const referrerRewards = await rewardsOf(app, side.referrer);
				// Whoever won, its rewards name its own friend; the loser's ledgers hold nothing.
				for (const reward of [...friendRewards, ...referrerRewards]) expect(reward.friendemail).toBe(side.email);
				rewards += friendRewards.length + referrerRewards.length;
			}
		}
		expect(rewards).toBe(20);
	});

	it("a repeat for another user, event name or value is refused naming what was recorded; the same event is a duplicate", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%" },
			],
		});
		const [a, b] = await twoReferrals(app, 0);
		expect((await conversion(app, a.friend, "42", { eventname: "Purchase", transactionvalue: "20" })).body).toMatchObject({
			duplicate: false,
			rewardscreated: 1,
		});
		const recorded = { userkey: a.friend, eventname: "Purchase", transactionvalue: 20 };
		for (const repeat of [
			{ userkey: b.friend, eventname: "Purchase", transactionvalue: "20" },
			{ userkey: a.friend, eventname: "Signup", transactionvalue: "20" },
			{ userkey: a.friend, eventname: "Purchase", transactionvalue: "21" },
			{ userkey: a.friend, eventname: "Purchase" },
		]) {
			const answer = await conversion(app, repeat.userkey, "42", repeat);
			expect(answer.status).toBe(409);
			expect(answer.body).toMatchObject({ errorcode: "customid_conflict", recorded });
			expect(answer.body.message).toContain("Purchase");
		}
		const same = await conversion(app, a.friend, "0042", { eventname: "purchase", transactionvalue: 20.0 });
		expect(same.body).toMatchObject({ success: true, duplicate: true, rewardscreated: 0 });
		expect(await rewardsOf(app, a.referrer)).toHaveLength(1);
		expect(await rewardsOf(app, b.referrer)).toHaveLength(0);
	});

	it("an event no rule matches says so and names the campaign's event names; its corrected resend is a conflict, not a silent duplicate", async () => {
		const app = await createApp();
		const [a] = await twoReferrals(app, 0);
		const typo = await conversion(app, a.friend, "77", { eventname: "Sigunp" });
		expect(typo.status).toBe(200);
		expect(typo.body).toMatchObject({ success: true, duplicate: false, rewardscreated: 0 });
		expect(typo.body.message).toMatch(/No active rule .* eventname Sigunp; its event names: Signup\./);
		const corrected = await conversion(app, a.friend, "77");
		expect(corrected.status).toBe(409);
		expect(corrected.body).toMatchObject({ errorcode: "customid_conflict", recorded: { eventname: "Sigunp" } });
		expect(await rewardsOf(app, a.friend)).toHaveLength(0);
	});
});
