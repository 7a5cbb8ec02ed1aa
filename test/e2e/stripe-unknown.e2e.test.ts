import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chargeRefunded, type Harness, invoicePaid, startHarness } from "./stripe-harness";

// Issue 47, "an unknown outcome pays twice", end to end against `wrangler dev`: a credit whose every
// attempt goes unanswered (the local Stripe holds it past the client's timeout, then cuts it) until
// Stripe's key lifetime has passed, and a refund booked meanwhile. Stripe's own record (its list of
// the customer's balance transactions) decides what happened, and the reward is never paid twice:
// before the fix, the refund's debit went out at once and the re-drive's failure booked a new full
// credit under a new key (credit, debit, credit for a fully refunded reward).

// The key lifetime (23 h in production) and the client's timeout (10 s) made short enough for a test.
const VARS = { STRIPE_KEY_LIFETIME_MS: "8000", STRIPE_TIMEOUT_MS: "1500" };
const HOLD_MS = 2_500;

let h: Harness;

beforeAll(async () => {
	h = await startHarness("stripe-unknown", {}, { vars: VARS });
}, 300_000);

afterAll(async () => {
	await h?.stop();
});

const listed = (customer: string) =>
	h.fake.calls.filter((c) => c.method === "GET" && c.path === `/v1/customers/${customer}/balance_transactions`).length;

async function payoutState(rewarddtlid: string): Promise<string | null | undefined> {
	const res = await h.admin("GET", `/apps/${h.appid}/rewards?rewarddtlid=${encodeURIComponent(rewarddtlid)}`);
	return res.body.rewards?.[0]?.payoutstate;
}

describe("a credit unanswered past Stripe's key lifetime, then refunded", { timeout: 180_000 }, () => {
	for (const applied of [true, false]) {
		const outcome = applied ? "landed" : "was never applied";
		it(`is resolved from Stripe's record when it ${outcome}, and never paid twice`, async () => {
			const { customer, friendCustomer, rewardid } = await h.referral(applied ? "unknown-landed" : "unknown-void");
			h.fake.silence(customer, { applied, holdMs: HOLD_MS });
			const paid = invoicePaid(friendCustomer, 10_000);
			expect(await h.deliver(paid)).toBe(200);
			await h.until("the credit sent", async () =>
				h.fake.calls.some((c) => c.method === "POST" && c.path === `/v1/customers/${customer}/balance_transactions`) ? true : undefined,
			);
			const sentAt = Date.now();
			expect(await h.deliver(chargeRefunded(paid, 10_000))).toBe(200);
			await h.until("the reward reversed", async () => ((await h.status(rewardid)).rewardstatus === "Rejected" ? true : undefined));
			// Past the key lifetime, the re-drive gives the credit up as unknown; what follows settles it.
			await h.until(
				"the payouts settled after the key lifetime",
				async () => {
					await h.sweep();
					if (Date.now() < sentAt + 8_000) return undefined;
					const state = await payoutState(rewardid);
					return state !== undefined && !["due", "sending", "unknown"].includes(String(state)) ? true : undefined;
				},
				120_000,
			);
			await h.settlesAt(customer, 0);
			// More sweeps book nothing more.
			for (let i = 0; i < 3; i++) await h.sweep();
			await new Promise((resolve) => setTimeout(resolve, 2_000));
			const amounts = h.fake.created.filter((t) => t.customer === customer).map((t) => t.amount);
			// Landed: the credit, then the refund's debit. Never applied: nothing at all (the debit, never sent, is cancelled).
			expect(amounts).toEqual(applied ? [-1000, 1000] : []);
			expect(listed(customer)).toBeGreaterThan(0);
			expect(await h.status(rewardid)).toMatchObject({ rewardstatus: "Rejected", reward: "0" });
			expect(await payoutState(rewardid)).toBe(applied ? "paid" : null);
			expect((await h.status(rewardid)).comment ?? "").not.toContain("No answer from Stripe");
		});
	}
});
