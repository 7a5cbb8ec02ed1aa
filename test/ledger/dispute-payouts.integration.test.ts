import { describe, expect, it } from "vitest";
import { appKeyAudit } from "../../src/ledger/audit";
import type { ReverseOperation } from "../../src/ledger/transaction-types";
import { freshLedger, grantOf } from "./support";

/**
 * A dispute's hold and the payout records of a Stripe reward (issue 47,
 * ledger/dispute-holds.ts). Found by the history checker (seed 1): a dispute
 * opened and lost at once, the loss's reversal applied first, booked the
 * debit of what was paid; the late hold then cancelled every due record,
 * that debit included, and nothing booked it again (a reward write no longer
 * reconciles): the customer kept 13 USD of a lost sale.
 */

const lost: ReverseOperation = {
	kind: "reverse",
	customid: "901",
	refundid: "stripe:dispute:dp_1",
	refundvalue: null,
	transactionvalue: 10_000,
	reason: "Stripe dispute dp_1 lost: reversed as a full refund.",
};

async function stripeReward() {
	const { appid, userkey, stub } = freshLedger();
	const { rewards } = await stub.grant(appid, userkey, [grantOf({ customid: "901", key: "901:1", amount: 10, rewardtype: "Stripe" })]);
	const id = rewards[0]!.rewarddtlid;
	const seq = Number(id.slice(id.lastIndexOf("-") + 1));
	const phase = (phase: "hold" | "restore" | "release") =>
		stub.disputePhase(appid, userkey, { customid: "901", dispute: "dp_1", phase, audit: { ...appKeyAudit("key"), entryid: `e_${phase}` } });
	const states = async () => (await stub.payouts(seq)).map((p) => [p.n, p.amount, p.state]);
	return { stub, seq, phase, states };
}

describe("UserLedger: a dispute's hold and the reward's payouts", () => {
	it("a hold arriving after the loss's reversal leaves the reversal's debit due", async () => {
		const { stub, seq, phase, states } = await stripeReward();
		expect(await stub.claimPayout(seq, 1, "cus_1", true)).toMatchObject({ ok: true, claim: { send: { amount: 1000 } } });
		expect(await stub.payoutPaid(seq, 1, "cbtxn_1", null)).toMatchObject({ ok: true, changed: true });
		expect(await stub.execute(lost)).toMatchObject({ ok: true });
		expect(await states()).toEqual([
			[1, 1000, "paid"],
			[2, -1000, "due"],
		]);
		// The open, delivered late, then the close applied again (integrations/stripe/disputes.ts).
		expect(await phase("hold")).toMatchObject({ ok: true });
		expect(await stub.execute(lost)).toMatchObject({ ok: true });
		expect(await phase("release")).toMatchObject({ ok: true });
		expect(await states()).toEqual([
			[1, 1000, "paid"],
			[2, -1000, "due"],
		]);
	});

	it("a hold withdraws a credit not sent yet; a won dispute books it again under a new key", async () => {
		const { phase, states } = await stripeReward();
		expect(await states()).toEqual([[1, 1000, "due"]]);
		expect(await phase("hold")).toMatchObject({ ok: true });
		expect(await states()).toEqual([[1, 1000, "cancelled"]]);
		expect(await phase("restore")).toMatchObject({ ok: true });
		expect(await states()).toEqual([
			[1, 1000, "cancelled"],
			[2, 1000, "due"],
		]);
	});
});
