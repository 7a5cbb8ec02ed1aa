import { describe, expect, it } from "vitest";
import type { ClawbackRow } from "../../src/ledger/schema";
import type { BalanceRecord, LedgerReward, SettableStatus } from "../../src/ledger/types";
import { freshLedger, grantOf, mulberry32 } from "./support";

/**
 * Property: whatever sequence of grants, status changes, redemptions and
 * refunds (full and partial reversals) happens, with replayed grants and
 * retried keyed redemptions between the steps (they must change nothing),
 * the running totals equal a balance recomputed from the rewards and
 * clawbacks themselves. The recomputation below is written independently of
 * src/ledger/balance.ts, straight from decisions.md §4 and docs/rewards.md
 * ("Refunds and clawbacks"): a reward is worth amount - reversed; what was
 * used of it (redeemed, or settled against a debt) counts as claimed up to
 * that worth; unpaid clawbacks are owed.
 */

type Sums = { pending: number; approved: number; claimed: number; owed: number };
const ZERO: Sums = { pending: 0, approved: 0, claimed: 0, owed: 0 };

function recompute(rewards: LedgerReward[], clawbacks: ClawbackRow[]): Map<string, Sums> {
	const out = new Map<string, Sums>();
	const at = (key: string) => {
		const s = out.get(key) ?? { ...ZERO };
		out.set(key, s);
		return s;
	};
	for (const r of rewards) {
		const s = at(`${r.rewardunit}|${r.growthhack}|${r.campaignid}`);
		const worth = cents(r.amount) - cents(r.reversedAmount);
		const used = Math.min(cents(r.redeemed) + cents(r.settled), worth);
		if (r.rewardstatus === "UnderReview" || r.rewardstatus === "Suspicious") {
			s.pending += worth - used;
			s.claimed += used;
		} else if (r.rewardstatus === "Approved") {
			s.approved += worth - used;
			s.claimed += used;
		} else if (r.rewardstatus === "Rewarded") {
			s.claimed += worth;
		}
	}
	for (const c of clawbacks) at(`${c.rewardunit}|${c.growthhack}|${c.campaignid}`).owed += c.amount - c.paid;
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
				expect(c.owed).toBeGreaterThanOrEqual(0);
				out.set(`${unit.rewardunit}|${hack.growthhack}|${c.campaignid}`, {
					pending: cents(c.pending),
					approved: cents(c.approved),
					claimed: cents(c.claimed),
					owed: cents(c.owed),
				});
			}
		}
	}
	return out;
}

/** What the user received in cash, per balance row: everything redeemed, from any reward, whatever became of it. */
function cashRedeemed(rewards: LedgerReward[]): Map<string, number> {
	const out = new Map<string, number>();
	for (const r of rewards) {
		const key = `${r.rewardunit}|${r.growthhack}|${r.campaignid}`;
		out.set(key, (out.get(key) ?? 0) + cents(r.redeemed));
	}
	return out;
}

const SEEDS = [1, 7, 42, 1337, 20261121, 987654321];
const STEPS = 160;

describe("balance equals the rewards it sums (seeded property)", () => {
	for (const seed of SEEDS) {
		// 120 steps take 2.5-6 s on a loaded 2-core machine: a generous bound, not a speed check.
		it(`seed ${seed}`, { timeout: 60_000 }, async () => {
			const rand = mulberry32(seed);
			const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
			const { appid, userkey, stub } = freshLedger();
			const ids: string[] = [];
			// A few events that several rewards share, so refunds meet fixed and percent rewards in several states.
			const events = Array.from({ length: 6 }, (_, k) => ({
				customid: `${seed}${k}`,
				transactionvalue: k === 5 ? null : 1000 + Math.floor(rand() * 50000),
			}));
			const grants: ReturnType<typeof grantOf>[] = [];
			const counts = { grant: 0, status: 0, amount: 0, ids: 0, okRedeem: 0, reverse: 0, okReverse: 0, partial: 0, replays: 0, retries: 0 };
			let refunds = 0;
			for (let step = 0; step < STEPS; step++) {
				const roll = rand();
				if (roll < 0.3 || ids.length === 0) {
					counts.grant++;
					const event = pick(events);
					const grant = grantOf({
						amount: Math.floor(rand() * 5000) / 100 + Math.floor(rand() * 10) / 1000,
						status: pick(["Approved", "Approved", "UnderReview", "Suspicious"] as const),
						campaignid: pick([1, 2, 3]),
						growthhack: pick(["SaaS_Referrals", "Other"]),
						rewardunit: pick(["USD", "USD", "points"]),
						customid: event.customid,
						key: `${event.customid}:${step}`,
						percent: event.transactionvalue !== null && rand() < 0.6,
					});
					const { rewards } = await stub.grant(appid, userkey, [grant]);
					ids.push(rewards[0]!.rewarddtlid);
					grants.push(grant);
				} else if (roll < 0.5) {
					counts.status++;
					const changes = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
						rewarddtlid: pick(ids),
						status: pick(["Approved", "Approved", "UnderReview", "Suspicious", "Rejected"] as SettableStatus[]),
						message: rand() < 0.5 ? null : `step ${step}`,
					}));
					await stub.changeStatuses(changes);
				} else if (roll < 0.72) {
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
				} else if (roll < 0.78) {
					// A replayed grant (an event sent again) returns its reward and creates nothing.
					counts.replays++;
					const before = await stub.balance({});
					const { rewards } = await stub.grant(appid, userkey, [pick(grants)]);
					expect(rewards[0]?.created).toBe(false);
					expect(await stub.balance({})).toEqual(before);
				} else if (roll < 0.88) {
					counts.ids++;
					const r = await stub.redeemByIds([pick(ids), ...(rand() < 0.3 ? [pick(ids)] : [])]);
					if (r.ok) counts.okRedeem++;
				} else {
					counts.reverse++;
					const event = pick(events);
					const full = event.transactionvalue === null || rand() < 0.3;
					const refundvalue = full ? null : 1 + Math.floor(rand() * (event.transactionvalue ?? 0) * 0.5);
					if (!full) counts.partial++;
					const r = await stub.execute({
						kind: "reverse",
						customid: event.customid,
						refundid: `r${refunds++}`,
						refundvalue,
						transactionvalue: event.transactionvalue,
						reason: rand() < 0.5 ? null : `refund ${step}`,
					});
					if (r.ok) counts.okReverse++;
					else expect(r.error.code).toBe("refund_exceeds_transaction");
				}
				if (step % 20 === 19 || step === STEPS - 1) {
					const rewards = await stub.listRewards();
					const clawbacks = await stub.listClawbacks();
					const balances = flatten(await stub.balance({}));
					expect(balances).toEqual(recompute(rewards, clawbacks));
					const cash = cashRedeemed(rewards);
					for (const [key, b] of balances) {
						// Every unit the user redeemed is either still theirs (claimed) or owed back.
						expect(b.claimed + b.owed).toBe(cash.get(key) ?? 0);
						// What is owed is paid before anything is redeemable.
						if (b.owed > 0) expect(b.approved).toBe(0);
					}
					for (const r of rewards) {
						expect(r.redeemed).toBeGreaterThanOrEqual(0);
						expect(r.reversedAmount).toBeGreaterThanOrEqual(0);
						expect(r.reversedAmount).toBeLessThanOrEqual(r.amount);
						if (r.rewardstatus === "Rewarded")
							expect(cents(r.redeemed) + cents(r.settled)).toBeGreaterThanOrEqual(cents(r.amount - r.reversedAmount));
						if (r.reversedAmount === r.amount && r.amount > 0) expect(r.rewardstatus).toBe("Rejected");
					}
					for (const c of clawbacks) {
						expect(c.paid).toBeGreaterThanOrEqual(0);
						expect(c.paid).toBeLessThanOrEqual(c.amount);
					}
					// Everything settled went to a debt: the paid parts of the clawbacks.
					expect(rewards.reduce((a, r) => a + cents(r.settled), 0)).toBe(clawbacks.reduce((a, c) => a + c.paid, 0));
				}
			}
			expect(counts.partial).toBeGreaterThan(0);
			expect((await stub.listClawbacks()).length).toBeGreaterThan(0);
			// The run exercised every kind of step, including successful redemptions.
			expect(
				Math.min(counts.grant, counts.status, counts.amount, counts.ids, counts.okRedeem, counts.okReverse, counts.replays, counts.retries),
			).toBeGreaterThan(0);
		});
	}
});
