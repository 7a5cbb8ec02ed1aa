import { describe, expect, it } from "vitest";
import { isSettableStatus, transitionError } from "../../src/ledger/status";
import type { RewardStatus } from "../../src/ledger/types";

const ALL: RewardStatus[] = ["Approved", "UnderReview", "Suspicious", "Rejected", "Rewarded"];
const SETTABLE = ["Approved", "UnderReview", "Suspicious", "Rejected"] as const;

describe("transitionError", () => {
	for (const from of ALL.filter((s) => s !== "Rewarded")) {
		for (const to of SETTABLE) {
			it(`${from} -> ${to} is allowed when nothing was redeemed`, () => {
				expect(transitionError({ status: from, redeemed: 0 }, to)).toBeNull();
			});
		}
	}

	for (const to of SETTABLE) {
		it(`Rewarded -> ${to} is refused`, () => {
			expect(transitionError({ status: "Rewarded", redeemed: 100 }, to)).toMatch(/Rewarded reward cannot change/);
		});
	}

	it("a partly redeemed reward cannot be Rejected, but may go back under review", () => {
		expect(transitionError({ status: "Approved", redeemed: 1 }, "Rejected")).toMatch(/partly redeemed/);
		expect(transitionError({ status: "Approved", redeemed: 1 }, "UnderReview")).toBeNull();
		expect(transitionError({ status: "Suspicious", redeemed: 1 }, "Rejected")).toMatch(/partly redeemed/);
	});

	it("Rewarded and unknown statuses cannot be set by hand", () => {
		expect(transitionError({ status: "Approved", redeemed: 0 }, "Rewarded")).toMatch(/cannot be set/);
		expect(transitionError({ status: "Approved", redeemed: 0 }, "Under Review")).toMatch(/cannot be set/);
		expect(isSettableStatus("Rewarded")).toBe(false);
		expect(isSettableStatus("UnderReview")).toBe(true);
	});
});
