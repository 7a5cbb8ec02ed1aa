import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ReverseOperation } from "../../src/ledger/transaction-types";
import { freshLedger, grantOf } from "./support";

/**
 * An unknown payout outcome in the ledger (issue 47, ledger/payout-resolution.ts):
 * a credit still sending past the key lifetime becomes `unknown`; a full
 * refund meanwhile books no new record (on main a debit, then the failure's
 * own comment write a new full credit); Stripe's record then settles it, and
 * an operator's retry looks it up again instead of booking.
 */

const refund: ReverseOperation = {
	kind: "reverse",
	customid: "801",
	refundid: "r1",
	refundvalue: null,
	transactionvalue: 10_000,
	reason: null,
};

async function unknownCredit() {
	const { appid, userkey, stub } = freshLedger();
	const { rewards } = await stub.grant(appid, userkey, [grantOf({ customid: "801", key: "801:1", amount: 10, rewardtype: "Stripe" })]);
	const id = rewards[0]!.rewarddtlid;
	const seq = Number(id.slice(id.lastIndexOf("-") + 1));
	expect(await stub.claimPayout(seq, 1, "cus_unknown", true)).toMatchObject({ ok: true, claim: { send: { amount: 1000 } } });
	// No answer, and Stripe's key lifetime (0 here) has passed: unknown, never sent again.
	expect(await stub.redrivePayouts(0, 0)).toMatchObject({ ok: true, failed: 1 });
	return { stub, seq };
}

/** The reward row's payout state and comment, as stored. */
const rewardOf = (stub: ReturnType<typeof freshLedger>["stub"], seq: number) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql
			.exec<{ payout_state: string | null; comment: string | null }>("SELECT payout_state, comment FROM rewards WHERE seq = ?", seq)
			.one(),
	);

const states = async (stub: ReturnType<typeof freshLedger>["stub"], seq: number) =>
	(await stub.payouts(seq)).map((p) => [p.n, p.amount, p.state]);

describe("UserLedger: an unknown payout outcome", () => {
	it("blocks every booking of its reward, a refund's included, and is looked up instead of sent", async () => {
		const { stub, seq } = await unknownCredit();
		expect(await rewardOf(stub, seq)).toMatchObject({ payout_state: "unknown" });
		expect(await stub.execute(refund)).toMatchObject({ ok: true });
		expect(await states(stub, seq)).toEqual([[1, 1000, "unknown"]]);
		expect(await stub.claimPayout(seq, 1, "cus_unknown", true)).toMatchObject({
			ok: true,
			claim: { resolve: { n: 1, customer: "cus_unknown", key: expect.stringMatching(/^payout-/) } },
		});
		// An operator's retry books nothing over it.
		expect(await stub.retryPayouts()).toMatchObject({ ok: true, queued: 0 });
		expect(await states(stub, seq)).toEqual([[1, 1000, "unknown"]]);
	});

	it("landed: recorded paid, then the refund's debit is booked", async () => {
		const { stub, seq } = await unknownCredit();
		await stub.execute(refund);
		expect(await stub.resolvePayout(seq, 1, { applied: true, stripeId: "cbtxn_1" })).toMatchObject({ ok: true, changed: true });
		expect(await states(stub, seq)).toEqual([
			[1, 1000, "paid"],
			[2, -1000, "due"],
		]);
	});

	it("never applied: void, and nothing more is booked for a refunded reward", async () => {
		const { stub, seq } = await unknownCredit();
		await stub.execute(refund);
		expect(await stub.resolvePayout(seq, 1, { applied: false })).toMatchObject({ ok: true, changed: true });
		expect(await states(stub, seq)).toEqual([[1, 1000, "void"]]);
		const after = await rewardOf(stub, seq);
		expect(after.payout_state).toBeNull();
		expect(after.comment ?? "").not.toContain("No answer");
	});

	it("undecided: stays unknown with why; an operator's retry looks it up again", async () => {
		const { stub, seq } = await unknownCredit();
		expect(await stub.resolvePayout(seq, 1, { undecided: "not among the newest 500" })).toMatchObject({ ok: true });
		expect(await rewardOf(stub, seq)).toMatchObject({
			payout_state: "unknown",
			comment: expect.stringContaining("not among the newest 500"),
		});
		const before = (await stub.payouts(seq))[0]!.updated_at;
		await new Promise((resolve) => setTimeout(resolve, 5));
		await stub.retryPayouts();
		expect((await stub.payouts(seq))[0]!.updated_at).toBeGreaterThan(before);
	});
});
