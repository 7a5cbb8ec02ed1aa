import { describe, expect, it } from "vitest";
import type { BalanceRecord, LedgerReward, SettableStatus } from "../../src/ledger/types";
import { freshLedger, grantOf, mulberry32 } from "./support";

/**
 * Property: whatever sequence of grants, status changes and redemptions
 * happens (with replayed grants and retried keyed redemptions between the
 * steps: they must change nothing), the running totals equal a balance recomputed from the rewards
 * themselves. The recomputation below is written independently of
 * src/ledger/balance.ts, straight from decisions.md §4.
 */

type Sums = { pending: number; approved: number; claimed: number };

function recompute(rewards: LedgerReward[]): Map<string, Sums> {
	const out = new Map<string, Sums>();
	for (const r of rewards) {
		const key = `${r.rewardunit}|${r.growthhack}|${r.campaignid}`;
		const s = out.get(key) ?? { pending: 0, approved: 0, claimed: 0 };
		const amount = Math.round(r.amount * 100);
		const redeemed = Math.round(r.redeemed * 100);
		if (r.rewardstatus === "UnderReview" || r.rewardstatus === "Suspicious") {
			s.pending += amount - redeemed;
			s.claimed += redeemed;
		} else if (r.rewardstatus === "Approved") {
			s.approved += amount - redeemed;
			s.claimed += redeemed;
		} else if (r.rewardstatus === "Rewarded") {
			s.claimed += amount;
		}
		out.set(key, s);
	}
	return out;
}

const cents = (n: number) => Math.round(n * 100);

function flatten(records: BalanceRecord[]): Map<string, Sums> {
	const out = new Map<string, Sums>();
	for (const unit of records) {
		const sum = (xs: { total: number; pending: number; approved: number; claimed: number }[]) => xs.reduce((a, x) => a + cents(x.total), 0);
		expect(cents(unit.total)).toBe(cents(unit.pending) + cents(unit.approved) + cents(unit.claimed));
		expect(cents(unit.total)).toBe(sum(unit.growthhacks));
		for (const hack of unit.growthhacks) {
			expect(cents(hack.total)).toBe(cents(hack.pending) + cents(hack.approved) + cents(hack.claimed));
			expect(cents(hack.total)).toBe(sum(hack.campaigns));
			for (const c of hack.campaigns) {
				expect(cents(c.total)).toBe(cents(c.pending) + cents(c.approved) + cents(c.claimed));
				for (const n of [c.pending, c.approved, c.claimed]) expect(n).toBeGreaterThanOrEqual(0);
				out.set(`${unit.rewardunit}|${hack.growthhack}|${c.campaignid}`, {
					pending: cents(c.pending),
					approved: cents(c.approved),
					claimed: cents(c.claimed),
				});
			}
		}
	}
	return out;
}

const SEEDS = [1, 7, 42, 1337, 20261121, 987654321];
const STEPS = 120;

describe("balance equals the rewards it sums (seeded property)", () => {
	for (const seed of SEEDS) {
		// 120 steps take 2.5-6 s on a loaded 2-core machine: a generous bound, not a speed check.
		it(`seed ${seed}`, { timeout: 60_000 }, async () => {
			const rand = mulberry32(seed);
			const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
			const { appid, userkey, stub } = freshLedger();
			const ids: string[] = [];
			const grants: ReturnType<typeof grantOf>[] = [];
			const counts = { grant: 0, status: 0, amount: 0, ids: 0, okRedeem: 0, replays: 0, retries: 0 };
			for (let step = 0; step < STEPS; step++) {
				const roll = rand();
				if (roll < 0.35 || ids.length === 0) {
					counts.grant++;
					const grant = grantOf({
						amount: Math.floor(rand() * 5000) / 100 + Math.floor(rand() * 10) / 1000,
						status: pick(["Approved", "Approved", "UnderReview", "Suspicious"] as const),
						campaignid: pick([1, 2, 3]),
						growthhack: pick(["SaaS_Referrals", "Other"]),
						rewardunit: pick(["USD", "USD", "points"]),
					});
					const { rewards } = await stub.grant(appid, userkey, [grant]);
					ids.push(rewards[0]!.rewarddtlid);
					grants.push(grant);
				} else if (roll < 0.6) {
					counts.status++;
					const changes = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
						rewarddtlid: pick(ids),
						status: pick(["Approved", "Approved", "UnderReview", "Suspicious", "Rejected"] as SettableStatus[]),
						message: rand() < 0.5 ? null : `step ${step}`,
					}));
					await stub.changeStatuses(changes);
				} else if (roll < 0.85) {
					counts.amount++;
					const request = {
						amount: Math.floor(rand() * 3000) / 100 + 0.01,
						campaignid: rand() < 0.3 ? pick([1, 2, 3]) : undefined,
						growthhack: rand() < 0.3 ? pick(["SaaS_Referrals", "other"]) : undefined,
						rewardunit: pick(["USD", "points"]),
						idempotency: { key: `redeem-${seed}-${step}`, fingerprint: `f${step}` },
					};
					const r = await stub.redeemByAmount(request);
					if (r.ok) counts.okRedeem++;
					// A client retry with the same key: the first answer, nothing debited again.
					if (rand() < 0.5) {
						const before = await stub.balance({});
						const retry = await stub.redeemByAmount(request);
						if (r.ok) expect(retry).toEqual(r);
						if (r.ok) expect(await stub.balance({})).toEqual(before);
						counts.retries++;
					}
				} else if (roll < 0.92) {
					// A replayed grant (an event sent again) returns its reward and creates nothing.
					counts.replays++;
					const before = await stub.balance({});
					const { rewards } = await stub.grant(appid, userkey, [pick(grants)]);
					expect(rewards[0]?.created).toBe(false);
					expect(await stub.balance({})).toEqual(before);
				} else {
					counts.ids++;
					const r = await stub.redeemByIds([pick(ids), ...(rand() < 0.3 ? [pick(ids)] : [])]);
					if (r.ok) counts.okRedeem++;
				}
				if (step % 20 === 19 || step === STEPS - 1) {
					const rewards = await stub.listRewards();
					expect(flatten(await stub.balance({}))).toEqual(recompute(rewards));
					for (const r of rewards) {
						expect(r.redeemed).toBeGreaterThanOrEqual(0);
						expect(r.redeemed).toBeLessThanOrEqual(r.amount);
						if (r.rewardstatus === "Rewarded") expect(r.redeemed).toBe(r.amount);
					}
				}
			}
			// The run exercised every kind of step, including successful redemptions.
			expect(
				Math.min(counts.grant, counts.status, counts.amount, counts.ids, counts.okRedeem, counts.replays, counts.retries),
			).toBeGreaterThan(0);
		});
	}
});
