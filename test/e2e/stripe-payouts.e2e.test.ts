import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chargeRefunded, type Harness, invoicePaid, startHarness } from "./stripe-harness";

// Issue 31 end to end against `wrangler dev`: the ledger owns every payout,
// so what Stripe was paid (fake-stripe.ts records it) equals what each reward
// owes whatever happens while a payout is in flight, and an Idempotency-Key
// never goes out with two amounts (settlesAt checks both).

let h: Harness;

beforeAll(async () => {
	h = await startHarness("stripe-payouts");
}, 300_000);

afterAll(async () => {
	await h?.stop();
});

const change = (rewarddtlid: string, rewardstatus: string) => h.api("changerewardstatus", { rewardslist: [{ rewarddtlid, rewardstatus }] });

// Longer than the harness's 60 s waits, so that a failure says what it waited for (Stripe's net, the
// service's log) rather than only that the test ran out of time.
describe("Stripe payouts owned by the ledger", { timeout: 120_000 }, () => {
	it("a full refund while the payout is in flight ends with Stripe's net 0", async () => {
		const { customer, friendCustomer, rewardid } = await h.referral("inflight-refund");
		const held = h.fake.hold(customer);
		const paid = invoicePaid(friendCustomer, 10_000);
		expect(await h.deliver(paid)).toBe(200);
		await held.arrived;
		expect(await h.deliver(chargeRefunded(paid, 10_000))).toBe(200);
		await h
			.until("the reward reversed", async () => ((await h.status(rewardid)).rewardstatus === "Rejected" ? true : undefined))
			.finally(() => h.fake.release(customer));
		await h.settlesAt(customer, 0);
		expect(await h.status(rewardid)).toMatchObject({ rewardstatus: "Rejected", reward: "0" });
		expect(h.fake.created.filter((t) => t.customer === customer).map((t) => t.amount)).toEqual([-1000, 1000]);
	});

	it("a rejection while the payout is in flight ends with Stripe's net 0", async () => {
		const { customer, friendCustomer, rewardid } = await h.referral("inflight-reject");
		const held = h.fake.hold(customer);
		expect(await h.deliver(invoicePaid(friendCustomer, 10_000))).toBe(200);
		await held.arrived;
		const rejected = await change(rewardid, "Rejected").finally(() => h.fake.release(customer));
		expect(rejected.status).toBe(200);
		await h.settlesAt(customer, 0);
		expect((await h.status(rewardid)).rewardstatus).toBe("Rejected");
	});

	it("Under Review and back while the payout is in flight pays once and ends Rewarded", async () => {
		const { customer, friendCustomer, rewardid } = await h.referral("inflight-review");
		const held = h.fake.hold(customer);
		expect(await h.deliver(invoicePaid(friendCustomer, 10_000))).toBe(200);
		await held.arrived;
		// Stripe's answer comes while the reward is under review (the case: it then stayed Approved, paid, for good).
		try {
			expect((await change(rewardid, "Under Review")).status).toBe(200);
		} finally {
			h.fake.release(customer);
		}
		await h.until("Stripe's answer recorded while under review", async () => {
			const s = await h.status(rewardid);
			return s.payoutid ? s : undefined;
		});
		expect((await change(rewardid, "Approved")).status).toBe(200);
		await h.settlesAt(customer, -1000);
		const after = await h.until("the reward Rewarded", async () => {
			const s = await h.status(rewardid);
			return s.rewardstatus === "Rewarded" ? s : undefined;
		});
		expect(after.payoutid).toMatch(/^cbtxn_/);
		expect(h.fake.created.filter((t) => t.customer === customer)).toHaveLength(1);
	});

	it("a 500, then a half refund, then the retry: each key with one amount, Stripe's net what the reward owes", async () => {
		const { customer, friendCustomer, rewardid } = await h.referral("retry-half");
		h.fake.failNext(customer, 1, 500);
		const paid = invoicePaid(friendCustomer, 10_000);
		expect(await h.deliver(paid)).toBe(200);
		await h.until("the first try answered 500", async () =>
			h.fake.calls.some((c) => c.path.includes(customer) && c.status === 500) ? true : undefined,
		);
		expect(await h.deliver(chargeRefunded(paid, 5000))).toBe(200);
		await h.settlesAt(customer, -500);
		expect(await h.status(rewardid)).toMatchObject({ reward: "5" });
	});
});
