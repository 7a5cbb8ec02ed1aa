import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import type { LedgerReward } from "../../src/ledger/types";
import { mulberry32 } from "../ledger/support";
import { admin, createApp, request } from "../support/api";

/**
 * Seeded property over the public API: events, replays of earlier events,
 * campaign edits (rules kept by id, re-sent without ids, dropped, added),
 * keyed redemptions with retries, status changes and two friends racing one
 * customid, in random order. At
 * every checkpoint each user's balance equals the sum of its rewards and is
 * never negative; a replay never creates a reward; a keyed retry never
 * debits again.
 */

type Sums = Record<string, { pending: number; approved: number; claimed: number }>;

function recompute(rewards: LedgerReward[]): Sums {
	const out: Sums = {};
	for (const r of rewards) {
		const s = out[r.rewardunit] ?? { pending: 0, approved: 0, claimed: 0 };
		out[r.rewardunit] = s;
		const open = Math.round(r.amount * 100) - Math.round(r.redeemed * 100);
		const redeemed = Math.round(r.redeemed * 100);
		if (r.rewardstatus === "UnderReview" || r.rewardstatus === "Suspicious") s.pending += open;
		if (r.rewardstatus === "Approved") s.approved += open;
		if (r.rewardstatus === "Rejected") continue;
		s.claimed += r.rewardstatus === "Rewarded" ? Math.round(r.amount * 100) : redeemed;
	}
	return out;
}

const RULES = [
	{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
	{ rewardusertype: "Friend", eventname: "Signup", reward: 5, rewardunit: "USD" },
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%", maxrewardamount: 25, rewardfrequency: 3 },
];

describe("exactly once across replays, edits and keyed retries (seeded property)", () => {
	for (const seed of [3, 99, 2026]) {
		it(`seed ${seed}`, async () => {
			const rand = mulberry32(seed);
			const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
			const app = await createApp({ rewardrules: RULES });
			const referrer = (await app.api("register", { email: "ref@x.com" })).body;
			const friends: string[] = [];
			for (let i = 0; i < 3; i++) {
				friends.push((await app.api("register", { email: `f${i}@x.com`, referrercode: referrer.referralcode })).body.userkey);
			}
			const users = [referrer.userkey as string, ...friends];
			const rewardsOf = (userkey: string) => ledgerFor(env, app.appid, userkey).listRewards();
			const allRewards = async () => (await Promise.all(users.map(rewardsOf))).flat();
			const sent: { userkey: string; eventname: string; customid: string; transactionvalue?: string }[] = [];
			const counts = { events: 0, races: 0, replays: 0, edits: 0, redeems: 0, retries: 0, statuses: 0 };

			for (let step = 0; step < 40; step++) {
				const roll = rand();
				if (roll < 0.3 || sent.length === 0) {
					counts.events++;
					const event = {
						userkey: pick(friends),
						eventname: pick(["Signup", "Purchase"]),
						customid: String(seed * 1000 + step),
						...(rand() < 0.9 ? { transactionvalue: String(Math.floor(rand() * 50000) / 100) } : {}),
					};
					if (rand() < 0.3) {
						// Another friend sends the same customid at the same moment: one event of one user wins, the other is refused.
						counts.races++;
						const rival = { ...event, userkey: pick(friends.filter((f) => f !== event.userkey)) };
						const answers = await Promise.all(
							[event, rival].map((e) => app.api("registerconversionevent", { ...e, growthhack: "SaaS_Referrals" })),
						);
						const won = answers.findIndex((r) => r.status === 200);
						expect(answers.filter((r) => r.status === 409 && r.body.errorcode === "customid_conflict").length).toBe(won === -1 ? 0 : 1);
						if (won !== -1) sent.push([event, rival][won]!);
						continue;
					}
					const response = await app.api("registerconversionevent", { ...event, growthhack: "SaaS_Referrals" });
					expect([200, 400]).toContain(response.status);
					if (response.status === 200) sent.push(event);
				} else if (roll < 0.45) {
					counts.replays++;
					const before = (await allRewards()).length;
					const replay = await app.api("registerconversionevent", { ...pick(sent), growthhack: "SaaS_Referrals" });
					expect(replay.body).toMatchObject({ success: true, duplicate: true });
					expect((await allRewards()).length).toBe(before);
				} else if (roll < 0.6) {
					counts.edits++;
					const current = (await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body.rewardrules as Record<string, any>[];
					const kept = current.map(({ ruleid, rewardusertype, eventname, reward, rewardunit, maxrewardamount, rewardfrequency }) => ({
						ruleid,
						rewardusertype,
						eventname,
						reward: rand() < 0.5 ? reward : Math.floor(rand() * 2000) / 100,
						rewardunit,
						maxrewardamount,
						rewardfrequency,
					}));
					const edit = pick(["keep", "resend", "drop", "add"] as const);
					const rules =
						edit === "keep"
							? kept
							: edit === "resend"
								? kept.map(({ ruleid: _, ...rule }) => rule)
								: edit === "drop"
									? kept.slice(1)
									: [...kept, pick(RULES)];
					expect((await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { rewardrules: rules })).status).toBe(200);
				} else if (roll < 0.85) {
					counts.redeems++;
					const body = JSON.stringify({
						apikey: app.apikey,
						privatekey: app.privatekey,
						userkey: pick(users),
						amount: String(Math.floor(rand() * 1500) / 100 + 0.01),
						rewardunit: "USD",
					});
					const keyed = () =>
						request("/saas/v1_0/redeemrewards", {
							method: "POST",
							headers: { "content-type": "application/json", "idempotency-key": `k-${seed}-${step}` },
							body,
						}).then(async (r) => ({ status: r.status, text: await r.text() }));
					const first = await keyed();
					expect([200, 400, 409]).toContain(first.status);
					if (rand() < 0.6) {
						counts.retries++;
						const before = await allRewards();
						expect(await keyed()).toEqual(first);
						expect(recompute(await allRewards())).toEqual(recompute(before));
					}
				} else {
					counts.statuses++;
					const rewards = await allRewards();
					if (rewards.length === 0) continue;
					const list = Array.from({ length: 1 + Math.floor(rand() * 2) }, () => pick(rewards).rewarddtlid);
					const response = await app.api("changerewardstatus", {
						rewardslist: [...new Set(list)].map((rewarddtlid) => ({
							rewarddtlid,
							rewardstatus: pick(["Approved", "Approved", "Under Review", "Rejected"]),
						})),
					});
					expect([200, 409]).toContain(response.status);
				}
				if (step % 10 === 9) {
					for (const userkey of users) {
						const ledger = ledgerFor(env, app.appid, userkey);
						const rewards = await ledger.listRewards();
						const balance: Sums = {};
						for (const unit of await ledger.balance({})) {
							expect(Math.min(unit.pending, unit.approved, unit.claimed)).toBeGreaterThanOrEqual(0);
							balance[unit.rewardunit] = {
								pending: Math.round(unit.pending * 100),
								approved: Math.round(unit.approved * 100),
								claimed: Math.round(unit.claimed * 100),
							};
						}
						const expected = recompute(rewards);
						for (const unit of Object.keys(balance)) expected[unit] ??= { pending: 0, approved: 0, claimed: 0 };
						expect(balance).toEqual(expected);
						// One reward per (event, rule): the ledger's grant keys never repeat.
						expect(new Set(rewards.map((r) => r.key)).size).toBe(rewards.length);
						// A friend's ledger holds rewards of its own events only.
						if (userkey !== referrer.userkey) {
							const owners = rewards.map((r) => sent.find((e) => e.customid === r.key.split(":")[0])?.userkey);
							expect(owners.every((owner) => owner === userkey)).toBe(true);
						}
					}
				}
			}
			expect(Math.min(...Object.values(counts))).toBeGreaterThan(0);
		}, 120_000);
	}
});
