import { describe, expect, it } from "vitest";
import { contribution } from "../../src/ledger/balance";
import { decideRefund, proportionalPart, reversalEffect, reversedTarget } from "../../src/ledger/refund";

/** Amounts are hundredths throughout. */
describe("decideRefund", () => {
	const none = { refunded: 0, full: false };
	it("adds partial refunds up and refuses more than the transaction value", () => {
		expect(decideRefund(none, 5000, 20000)).toEqual({ kind: "apply", refundvalue: 5000, refunded: 5000, full: false });
		expect(decideRefund({ refunded: 5000, full: false }, 15000, 20000)).toEqual({
			kind: "apply",
			refundvalue: 15000,
			refunded: 20000,
			full: true,
		});
		expect(decideRefund({ refunded: 5000, full: false }, 15001, 20000)).toEqual({
			kind: "exceeds",
			refunded: 5000,
			transactionvalue: 20000,
		});
	});
	it("a full reversal takes what is left, once", () => {
		expect(decideRefund({ refunded: 5000, full: false }, null, 20000)).toEqual({
			kind: "apply",
			refundvalue: 15000,
			refunded: 20000,
			full: true,
		});
		expect(decideRefund({ refunded: 20000, full: true }, null, 20000)).toEqual({ kind: "noop" });
		expect(decideRefund({ refunded: 20000, full: true }, 1, 20000)).toEqual({ kind: "exceeds", refunded: 20000, transactionvalue: 20000 });
	});
	it("an event without a value can only be reversed whole", () => {
		expect(decideRefund(none, 1, null)).toEqual({ kind: "exceeds", refunded: 0, transactionvalue: 0 });
		expect(decideRefund(none, null, null)).toEqual({ kind: "apply", refundvalue: 0, refunded: 0, full: true });
	});
});

describe("proportionalPart", () => {
	it("rounds half-up and never exceeds the amount", () => {
		expect(proportionalPart(2000, 5000, 20000)).toBe(500);
		// 1001 * 1/2 = 500.5 -> 501
		expect(proportionalPart(1001, 1, 2)).toBe(501);
		// 1001 * 1/3 = 333.67 -> 334; 1001 * 1/4 = 250.25 -> 250
		expect(proportionalPart(1001, 1, 3)).toBe(334);
		expect(proportionalPart(1001, 1, 4)).toBe(250);
		expect(proportionalPart(1000, 30000, 20000)).toBe(1000);
		expect(proportionalPart(0, 1, 2)).toBe(0);
	});
	it("is exact for amounts whose product leaves the safe integers", () => {
		// 1e13 * (1e14 - 1) / 1e14 = 1e13 - 0.1 -> 1e13; and (1e14 - 6) gives 1e13 - 0.6 -> 1e13 - 1.
		expect(proportionalPart(10_000_000_000_000, 99_999_999_999_999, 100_000_000_000_000)).toBe(10_000_000_000_000);
		expect(proportionalPart(10_000_000_000_000, 99_999_999_999_994, 100_000_000_000_000)).toBe(9_999_999_999_999);
	});
});

describe("reversedTarget", () => {
	const partial = { full: false, refunded: 5000, transactionvalue: 20000 };
	it("reduces percent rewards in proportion, fixed ones only on a full refund", () => {
		expect(reversedTarget({ amount: 2000, reversed: 0, percent: true }, partial)).toBe(500);
		expect(reversedTarget({ amount: 1000, reversed: 0, percent: false }, partial)).toBe(0);
		expect(reversedTarget({ amount: 1000, reversed: 0, percent: false }, { ...partial, full: true })).toBe(1000);
	});
	it("works from the running total, so split refunds round like one", () => {
		const a = reversedTarget({ amount: 1001, reversed: 0, percent: true }, { full: false, refunded: 1, transactionvalue: 3 });
		const b = reversedTarget({ amount: 1001, reversed: a, percent: true }, { full: false, refunded: 2, transactionvalue: 3 });
		expect([a, b]).toEqual([334, 667]);
		expect(reversedTarget({ amount: 1001, reversed: 0, percent: true }, { full: false, refunded: 2, transactionvalue: 3 })).toBe(667);
	});
	it("never gives back what was taken", () => {
		expect(reversedTarget({ amount: 2000, reversed: 900, percent: true }, partial)).toBe(900);
	});
});

describe("reversalEffect", () => {
	const reward = { status: "Approved" as const, amount: 2000, reversed: 0, redeemed: 0, settled: 0 };
	it("an unredeemed reward taken back whole is Rejected with no debt", () => {
		expect(reversalEffect(reward, 2000)).toEqual({ status: "Rejected", debt: 0 });
	});
	it("the redeemed part beyond the new worth becomes a debt", () => {
		expect(reversalEffect({ ...reward, redeemed: 1500 }, 2000)).toEqual({ status: "Rejected", debt: 1500 });
		expect(reversalEffect({ ...reward, redeemed: 1500 }, 1000)).toEqual({ status: "Rewarded", debt: 500 });
		expect(reversalEffect({ ...reward, redeemed: 500 }, 1000)).toEqual({ status: "Approved", debt: 0 });
		expect(reversalEffect({ ...reward, status: "Rewarded", redeemed: 2000 }, 500)).toEqual({ status: "Rewarded", debt: 500 });
	});
	it("counts credit used to pay debts like redeemed credit, and a debt only once", () => {
		expect(reversalEffect({ ...reward, settled: 700 }, 2000)).toEqual({ status: "Rejected", debt: 700 });
		expect(reversalEffect({ ...reward, status: "Rewarded", redeemed: 2000, reversed: 500 }, 2000)).toEqual({
			status: "Rejected",
			debt: 1500,
		});
	});
	it("keeps a reward under review under review", () => {
		expect(reversalEffect({ ...reward, status: "UnderReview" }, 500)).toEqual({ status: "UnderReview", debt: 0 });
	});
});

describe("contribution with refunds", () => {
	it("counts what a reward is worth, its used part as claimed up to that worth", () => {
		expect(contribution("Approved", 2000, 500, 500, 0)).toEqual({ pending: 0, approved: 1000, claimed: 500 });
		expect(contribution("Approved", 2000, 300, 0, 700)).toEqual({ pending: 0, approved: 1000, claimed: 1000 });
		expect(contribution("Rewarded", 2000, 2000, 500, 0)).toEqual({ pending: 0, approved: 0, claimed: 1500 });
		expect(contribution("Rejected", 2000, 2000, 2000, 0)).toEqual({ pending: 0, approved: 0, claimed: 0 });
		expect(contribution("UnderReview", 2000, 1500, 1000, 0)).toEqual({ pending: 0, approved: 0, claimed: 1000 });
	});
});
