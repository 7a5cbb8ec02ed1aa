import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";

type Api = Awaited<ReturnType<typeof createApp>>["api"];

async function program(milestone: number, friendCount: number) {
	const app = await createApp({
		campaignstartdate: "2020-01-01T00:00:00Z",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 50, rewardunit: "USD", milestone }],
	});
	const referrer = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
	const friends: { userkey: string }[] = [];
	for (let i = 0; i < friendCount; i++) {
		const registered = await app.api<{ userkey: string }>("register", { email: `f${i}@x.com`, referrercode: referrer.referralcode });
		friends.push(registered.body);
	}
	return { ...app, referrer, friends };
}

let nextCustomId = 9000;
const purchase = (api: Api, userkey: string, customid = String(nextCustomId++)) =>
	api("registerconversionevent", { userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals", transactionvalue: "10" });

/** A fixed-seed shuffle (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
	let a = seed;
	const random = () => {
		a = (a + 0x6d2b79f5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	const out = [...items];
	for (let i = out.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[out[i], out[j]] = [out[j] as T, out[i] as T];
	}
	return out;
}

const referrerRewards = async (appid: string, userkey: string) => ledgerFor(env, appid, userkey).listRewards();

describe("milestones", () => {
	it("pays once, at the N-th distinct friend: a friend's second event does not count again", async () => {
		const { api, appid, referrer, friends } = await program(3, 3);
		const [a, b, c] = friends as [{ userkey: string }, { userkey: string }, { userkey: string }];
		for (const userkey of [a.userkey, a.userkey, b.userkey]) expect((await purchase(api, userkey)).body.rewardscreated).toBe(0);
		expect(await referrerRewards(appid, referrer.userkey)).toEqual([]);
		const third = await purchase(api, c.userkey);
		expect(third.body.rewardscreated).toBe(1);
		await purchase(api, c.userkey);
		const rewards = await referrerRewards(appid, referrer.userkey);
		expect(rewards).toEqual([expect.objectContaining({ reward: "50", rewardstatus: "Approved", friendemail: "f2@x.com" })]);
	});

	for (const seed of [1, 7, 42]) {
		it(`pays exactly once when conversions of different friends race (seed ${seed})`, async () => {
			const { api, appid, referrer, friends } = await program(3, 6);
			// Each friend twice, in a seeded order, all at once over HTTP: 12 conversions into one referrer's ledger.
			const sends = shuffled([...friends, ...friends], seed);
			const results = await Promise.all(sends.map((f) => purchase(api, f.userkey)));
			expect(results.every((r) => r.status === 200)).toBe(true);
			expect(results.reduce((n, r) => n + r.body.rewardscreated, 0)).toBe(1);
			const rewards = await referrerRewards(appid, referrer.userkey);
			expect(rewards.map((r) => r.reward)).toEqual(["50"]);
		});
	}

	it("reverses the milestone when a refund brings the friends below N, booking a clawback of what was redeemed", async () => {
		const { api, appid, referrer, friends } = await program(2, 3);
		const [a, b, c] = friends as [{ userkey: string }, { userkey: string }, { userkey: string }];
		const first = String(nextCustomId);
		await purchase(api, a.userkey);
		await purchase(api, b.userkey);
		expect((await referrerRewards(appid, referrer.userkey)).map((r) => r.reward)).toEqual(["50"]);
		const redeemed = await api("redeemrewards", { userkey: referrer.userkey, amount: "30" });
		expect(redeemed.body.success).toBe(true);
		const refund = await api("reverseconversionevent", { customid: first, reason: "refunded" });
		expect(refund.body, JSON.stringify(refund.body)).toMatchObject({ success: true, full: true });
		const [milestone] = await referrerRewards(appid, referrer.userkey);
		expect(milestone).toMatchObject({ rewardstatus: "Rejected", reward: "0", reversedamount: "50" });
		expect(await ledgerFor(env, appid, referrer.userkey).listClawbacks()).toEqual([expect.objectContaining({ amount: 3000, paid: 0 })]);
		// A third friend reaches N again, but the milestone was paid once: no second reward.
		await purchase(api, c.userkey);
		expect(await referrerRewards(appid, referrer.userkey)).toHaveLength(1);
	});

	it("keeps the milestone when a refund leaves N friends, and refuses milestones on Friend or percent rules", async () => {
		const { api, appid, campaignid, referrer, friends } = await program(2, 3);
		const [a, b, c] = friends as [{ userkey: string }, { userkey: string }, { userkey: string }];
		const first = String(nextCustomId);
		for (const f of [a, b, c]) await purchase(api, f.userkey);
		expect((await api("reverseconversionevent", { customid: first })).body.success).toBe(true);
		expect(await referrerRewards(appid, referrer.userkey)).toEqual([expect.objectContaining({ reward: "50", rewardstatus: "Approved" })]);
		for (const rule of [{ rewardusertype: "Friend" }, { rewardunit: "%" }]) {
			const res = await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, {
				rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD", milestone: 2, ...rule }],
			});
			expect(res.status, JSON.stringify(rule)).toBe(400);
		}
	});
});
