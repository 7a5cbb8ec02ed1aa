import { describe, expect, it } from "vitest";
import { check, type Entry, failuresExplained, subsetSums, type World } from "../e2e/history/checker";
import { generate, type Op, type Plan, testPlanOptions } from "../e2e/history/generator";

// The history checker's pure parts (test/e2e/history/): the seeded plan and
// the verdict. Each rule is shown to fire on a history that breaks it, and
// to stay quiet on one that keeps it.

const plan: Plan = {
	seed: 0,
	referrers: 1,
	friends: 2,
	invoices: new Map([[0, 10_000]]),
	ops: [
		{ kind: "pay", friend: 0, twice: false },
		{ kind: "refund", friend: 0, total: 5000, twice: false },
		{ kind: "convert", friend: 1, customid: "c0" },
		{ kind: "redeem", referrer: 0, amount: 300 },
	],
	killAt: 2,
};

const entry = (op: Op, status = 200, body: Record<string, any> | null = {}): Entry => ({
	client: 0,
	index: 0,
	op,
	status,
	body,
	start: 0,
	end: 0,
});
const history = (): Entry[] => [
	entry(plan.ops[0]!),
	entry(plan.ops[1]!),
	entry(plan.ops[2]!, 200, { duplicate: false }),
	entry(plan.ops[3]!),
];
const world = (): World => ({
	rewards: [
		// 10 % of 100.00 is 10.00; half refunded: 5.00 owed, 5.00 reversed.
		{ rewarddtlid: "rk-1", referrer: 0, friend: 0, wallet: false, status: "Rewarded", reward: 500, reversed: 500, payoutstate: "paid" },
		{ rewarddtlid: "rk-2", referrer: 0, friend: 1, wallet: true, status: "Approved", reward: 500, reversed: 0, payoutstate: null },
	],
	balances: [{ referrer: 0, total: 500, pending: 0, approved: 200, claimed: 300 }],
	stripe: {
		created: [
			{ amount: -1000, rewarddtlid: "rk-1", customer: "cus_r0", idempotencyKey: "payout-a-rk-1" },
			{ amount: 500, rewarddtlid: "rk-1", customer: "cus_r0", idempotencyKey: "payout-a-rk-1-2" },
		],
		keyAmounts: new Map([
			["payout-a-rk-1", new Set([-1000])],
			["payout-a-rk-1-2", new Set([500])],
		]),
	},
});
const rules = (w: World, h = history()) => check(plan, h, w).map((v) => v.rule);

describe("the history checker's verdict", () => {
	it("finds nothing in a history that keeps every invariant", () => {
		expect(check(plan, history(), world())).toEqual([]);
	});

	it("a key sent with two amounts", () => {
		const w = world();
		w.stripe.keyAmounts.set("payout-a-rk-1", new Set([-1000, -500]));
		expect(rules(w)).toEqual(["one-amount-per-key"]);
	});

	it("Stripe's net not what the reward owes (a clawback never sent, a transaction of no reward)", () => {
		const w = world();
		w.stripe.created.pop();
		expect(rules(w)).toEqual(["net-equals-owed"]);
		const stray = world();
		stray.stripe.created.push({ amount: -100, rewarddtlid: "rk-2", customer: "cus_r0", idempotencyKey: "x" });
		expect(rules(stray)).toEqual(["net-equals-owed"]);
	});

	it("a rejected reward owes 0; a held one owes what was booked, paid or not", () => {
		const w = world();
		w.rewards[0]!.status = "Rejected";
		expect(rules(w, history().slice(0, 1).concat(history().slice(2)))).toContain("net-equals-owed");
		const held = world();
		held.rewards[0]!.status = "UnderReview";
		expect(rules(held).filter((r) => r === "net-equals-owed")).toEqual([]);
	});

	it("two conversions for one customid, or two answers saying new", () => {
		const w = world();
		w.rewards.push({ ...w.rewards[1]!, rewarddtlid: "rk-3" });
		w.balances[0]!.total = 1000;
		w.balances[0]!.approved = 700;
		expect(rules(w)).toEqual(["one-conversion-per-customid"]);
		const h = [...history(), entry(plan.ops[2]!, 200, { duplicate: false })];
		expect(rules(world(), h)).toEqual(["one-conversion-per-customid"]);
		// An unknown outcome may or may not have recorded it: one reward or none, never two.
		const unknown = history().map((e) => (e.op.kind === "convert" ? { ...e, status: 0, body: null } : e));
		expect(rules(world(), unknown)).toEqual([]);
	});

	it("a refund applied twice, or one acknowledged and never applied", () => {
		const twice = world();
		twice.rewards[0] = { ...twice.rewards[0]!, reward: 0, reversed: 1000 };
		twice.stripe.created[1]!.amount = 1000;
		twice.stripe.keyAmounts.set("payout-a-rk-1-2", new Set([1000]));
		expect(rules(twice)).toContain("refund-applied-once");
		const lost = world();
		lost.rewards[0] = { ...lost.rewards[0]!, reward: 1000, reversed: 0 };
		lost.stripe.created.pop();
		expect(rules(lost)).toContain("refund-applied-once");
		// Not acknowledged (Stripe would send it again): applied or not are both possible.
		const h = history().map((e) => (e.op.kind === "refund" ? { ...e, status: 0 } : e));
		expect(rules(lost, h)).toEqual([]);
	});

	it("a balance that is not its rewards less what was redeemed", () => {
		const w = world();
		w.balances[0] = { referrer: 0, total: 500, pending: 0, approved: 500, claimed: 0 };
		expect(rules(w)).toEqual(["balance-equals-rewards"]);
		// A redemption with no answer may have been applied.
		const h = history().map((e) => (e.op.kind === "redeem" ? { ...e, status: 0 } : e));
		expect(rules(w, h)).toEqual([]);
		expect(rules(world(), h)).toEqual([]);
		const overdrawn = world();
		overdrawn.balances[0] = { referrer: 0, total: 500, pending: 0, approved: -100, claimed: 600 };
		expect(rules(overdrawn)).toContain("balance-equals-rewards");
	});

	it("a payout left sending", () => {
		const w = world();
		w.rewards[0]!.payoutstate = "sending";
		expect(rules(w)).toEqual(["no-payout-sending"]);
	});

	it("a key answered 429, 409, 500 or not at all and never sent again to an answer for good", () => {
		const call = (status: number, requestId: string) => ({ key: "payout-a-rk-1", rewarddtlid: "rk-1", status, code: null, requestId });
		const w = world();
		w.stripe.calls = [call(429, "req_1"), call(-1, "req_2"), call(200, "req_3")];
		expect(rules(w)).toEqual([]);
		const dropped = world();
		dropped.stripe.calls = [call(500, "req_1"), call(429, "req_2"), call(409, "req_3")];
		expect(rules(dropped)).toEqual(["retryable-retried"]);
	});

	it("a payout left unknown, and a key never answered that was looked up in Stripe's record after its last attempt (issue 47)", () => {
		const unknown = world();
		unknown.rewards[0]!.payoutstate = "unknown";
		expect(rules(unknown)).toEqual(["no-payout-sending"]);
		const call = (status: number, at: number) => ({
			key: "payout-a-rk-1",
			rewarddtlid: "rk-1",
			status,
			code: null,
			requestId: `req_${at}`,
			at,
			customer: "cus_a",
		});
		const resolved = world();
		resolved.stripe.calls = [call(-1, 1), call(-1, 2)];
		resolved.stripe.lookups = [{ customer: "cus_a", at: 3 }];
		expect(rules(resolved)).toEqual([]);
		// A lookup before the last attempt, or of another customer, answers nothing about it.
		const early = world();
		early.stripe.calls = [call(-1, 1), call(-1, 5)];
		early.stripe.lookups = [
			{ customer: "cus_a", at: 3 },
			{ customer: "cus_b", at: 9 },
		];
		expect(rules(early)).toEqual(["retryable-retried"]);
	});

	it("a key reused with other parameters (Stripe's 400)", () => {
		const w = world();
		w.stripe.calls = [
			{ key: "payout-a-rk-1", rewarddtlid: "rk-1", status: 200, code: null, requestId: "req_1" },
			{ key: "payout-a-rk-1", rewarddtlid: "rk-1", status: 400, code: null, requestId: "req_2" },
		];
		expect(rules(w)).toEqual(["one-amount-per-key"]);
	});

	it("a refusal without its reward.payout_failed (code and request id), or a failure Stripe did not refuse", () => {
		const refusal = { key: "payout-a-rk-1-3", rewarddtlid: "rk-1", status: 402, code: "balance_insufficient", requestId: "req_7" };
		const hook = {
			rewarddtlid: "rk-1",
			code: "balance_insufficient",
			reason: "Stripe refused the payout (balance_insufficient, request req_7)",
		};
		const w = world();
		w.stripe.calls = [refusal];
		w.stripe.failedHooks = [hook];
		expect(rules(w)).toEqual([]);
		const silent = world();
		silent.stripe.calls = [refusal];
		silent.stripe.failedHooks = [{ ...hook, reason: "Stripe refused the payout (balance_insufficient, request req_71)" }];
		expect(rules(silent)).toEqual(["refusal-explained", "refusal-explained"]);
		// A 429 recorded as a refusal: Stripe refused nothing, and the key was never sent again.
		const rateLimited = world();
		rateLimited.stripe.calls = [{ ...refusal, status: 429, code: "rate_limit" }];
		rateLimited.stripe.failedHooks = [{ ...hook, code: "rate_limit", reason: "Stripe refused the payout (rate_limit, request req_7)" }];
		expect(rules(rateLimited)).toEqual(["retryable-retried", "refusal-explained"]);
	});

	it("a refusal answered before the restart may miss its webhook (the outbox sweep sends it minutes later)", () => {
		const refusal = {
			key: "payout-a-rk-1-3",
			rewarddtlid: "rk-1",
			status: 402,
			code: "balance_insufficient",
			requestId: "req_7",
			at: 1000,
		};
		const w = world();
		w.stripe.calls = [refusal];
		w.stripe.failedHooks = [];
		expect(rules(w)).toEqual(["refusal-explained"]);
		w.stripe.restartedAt = 2000;
		expect(rules(w)).toEqual([]);
	});

	it("a failed payout's reward says why: Stripe's code and request id in its comment", () => {
		const w = world();
		w.rewards[0] = {
			...w.rewards[0]!,
			payoutstate: "failed",
			comment: "Stripe refused the payout (resource_missing, request req_9): fix it in Stripe, then retry.",
		};
		w.stripe.calls = [{ key: "payout-a-rk-1-2", rewarddtlid: "rk-1", status: 404, code: "resource_missing", requestId: "req_9" }];
		expect(failuresExplained(w)).toEqual([]);
		w.rewards[0]!.comment = null;
		expect(failuresExplained(w).map((v) => v.rule)).toEqual(["refusal-explained"]);
		w.rewards[0]!.comment = "Stripe refused the payout (resource_missing, request req_10): fix it in Stripe, then retry.";
		expect(failuresExplained(w).map((v) => v.rule)).toEqual(["refusal-explained"]);
		// Rejected, and Stripe holds nothing of it (-1000 then +1000): nothing owed, nothing to act on.
		w.rewards[0] = { ...w.rewards[0]!, status: "Rejected", comment: "Refunded in Stripe" };
		w.stripe.created[1]!.amount = 1000;
		expect(failuresExplained(w)).toEqual([]);
		// Rejected while Stripe still holds its credit: the refused clawback must say why.
		w.stripe.created[1]!.amount = 500;
		expect(failuresExplained(w).map((v) => v.rule)).toEqual(["refusal-explained"]);
	});

	it("a lost dispute acknowledged reverses the whole reward; one won, or not acknowledged, may leave it (issue 47)", () => {
		const lost: Op = { kind: "dispute", friend: 0, state: "lost", twice: false };
		const w = world();
		// Half refunded only: with the lost close acknowledged, the whole 10.00 should be reversed and the reward Rejected.
		expect(rules(w, [...history(), entry(lost)])).toContain("refund-applied-once");
		const reversed = world();
		reversed.rewards[0] = { ...reversed.rewards[0]!, status: "Rejected", reward: 0, reversed: 1000 };
		reversed.stripe.created.push({ amount: 500, rewarddtlid: "rk-1", customer: "cus_r0", idempotencyKey: "payout-a-rk-1-3" });
		reversed.stripe.keyAmounts.set("payout-a-rk-1-3", new Set([500]));
		expect(rules(reversed, [...history(), entry(lost)])).toEqual([]);
		// Without an answer, Stripe would send it again: both are possible. A won dispute reverses nothing.
		expect(rules(w, [...history(), entry(lost, 0)])).toEqual([]);
		expect(rules(w, [...history(), entry({ ...lost, state: "won" })])).toEqual([]);
	});

	it("a side's Stripe sent another key, or a Stripe reward of a friend this side never paid (test and live apart, issue 47)", () => {
		const w = world();
		w.stripe.authorizations = ["Bearer sk_test_history4242"];
		expect(check(plan, history(), w, "sk_test_history4242")).toEqual([]);
		// The live key at the test twin's Stripe: a payout of the other side through this connection.
		w.stripe.authorizations = ["Bearer sk_test_history4242", "Bearer sk_live_history4242"];
		expect(check(plan, history(), w, "sk_test_history4242").map((v) => v.rule)).toEqual(["nothing-crosses"]);
		// Friend 1 paid no invoice on this side (the other side's invoice.paid, on the customer both sides share).
		const crossed = world();
		crossed.rewards.push({
			rewarddtlid: "rk-3",
			referrer: 0,
			friend: 1,
			wallet: false,
			status: "Approved",
			reward: 0,
			reversed: 0,
			payoutstate: null,
		});
		expect(rules(crossed)).toContain("nothing-crosses");
	});

	it("subset sums of the unknown amounts", () => {
		expect([...subsetSums([100, 250])].sort((a, b) => a - b)).toEqual([0, 100, 250, 350]);
	});
});

describe("the history checker's plan", () => {
	it("is the same for the same seed, and another for another", () => {
		expect(generate(7, { ops: 200 })).toEqual(generate(7, { ops: 200 }));
		expect(generate(8, { ops: 200 }).ops).not.toEqual(generate(7, { ops: 200 }).ops);
	});

	it("gives the seed's test-mode tenant a plan of its own, and leaves the live plan as it was (issue 47)", () => {
		const test = generate(7, testPlanOptions(200));
		expect(test).toEqual(generate(7, testPlanOptions(200)));
		expect(test).toMatchObject({ referrers: 2, friends: 12 });
		expect(test.ops.length).toBeGreaterThanOrEqual(50);
		expect(test.ops.some((o) => o.kind === "dispute")).toBe(true);
		expect(test.ops.every((o) => !("friend" in o) || o.friend < 12)).toBe(true);
		expect(generate(7, { ops: 200, stream: "live" })).toEqual(generate(7, { ops: 200 }));
	});

	it("has every kind of operation, a kill mid-run, one invoice per friend and refunds within their payment", () => {
		for (const seed of [1, 2, 3, 4, 5]) {
			const p = generate(seed, { ops: 200 });
			expect(p.ops.length).toBeGreaterThanOrEqual(200);
			expect(new Set(p.ops.map((o) => o.kind))).toEqual(new Set(["convert", "pay", "refund", "status", "redeem", "retry", "dispute"]));
			expect(p.killAt).toBeGreaterThan(p.ops.length * 0.3);
			expect(p.killAt).toBeLessThan(p.ops.length * 0.7);
			const pays = p.ops.filter((o) => o.kind === "pay").map((o) => o.friend);
			expect(new Set(pays).size).toBe(pays.length);
			for (const o of p.ops)
				if (o.kind === "refund") {
					expect(pays).toContain(o.friend);
					expect(o.total).toBeLessThanOrEqual(p.invoices.get(o.friend)!);
				}
			// Some customids are sent again, some refunds come before their payment.
			const customids = p.ops.filter((o) => o.kind === "convert").map((o) => o.customid);
			expect(new Set(customids).size).toBeLessThan(customids.length);
			const first = (kind: string, friend: number) => p.ops.findIndex((o) => o.kind === kind && "friend" in o && o.friend === friend);
			expect(pays.some((f) => first("refund", f) >= 0 && first("refund", f) < first("pay", f))).toBe(true);
			// Each disputed charge was paid before: an open and a close, after its payment, in either order.
			const disputes = p.ops.filter((o) => o.kind === "dispute");
			for (const d of disputes) expect(p.ops.indexOf(d)).toBeGreaterThan(first("pay", d.friend));
			for (const f of new Set(disputes.map((d) => d.friend)))
				expect(
					disputes
						.filter((d) => d.friend === f)
						.map((d) => d.state === "open")
						.sort(),
				).toEqual([false, true]);
		}
	});
});
