import { describe, expect, it } from "vitest";
import { tierAmount } from "../../src/rewards/tiers";
import { recurringWindowEnd, withinRecurringWindow } from "../../src/rewards/windows";

describe("recurring windows", () => {
	it("ends M calendar months later, the day clamped to the month's last", () => {
		expect(recurringWindowEnd("2026-01-31T10:00:00.000Z", 1, "UTC")).toBe("2026-02-28T10:00:00.000Z");
		expect(recurringWindowEnd("2028-01-31T10:00:00.000Z", 1, "UTC")).toBe("2028-02-29T10:00:00.000Z");
		expect(recurringWindowEnd("2026-03-15T00:00:00.000Z", 12, "UTC")).toBe("2027-03-15T00:00:00.000Z");
		expect(recurringWindowEnd("2026-11-30T12:00:00.000Z", 3, "UTC")).toBe("2027-02-28T12:00:00.000Z");
	});

	it("counts the months of the app's time zone, across its daylight-saving change", () => {
		// 03:00Z on 1 March is 22:00 on 28 February in New York: a month later is 28 March 22:00 EDT (02:00Z).
		expect(recurringWindowEnd("2026-03-01T03:00:00.000Z", 1, "America/New_York")).toBe("2026-03-29T02:00:00.000Z");
		expect(recurringWindowEnd("2026-03-01T03:00:00.000Z", 1, "UTC")).toBe("2026-04-01T03:00:00.000Z");
		// 23:30Z on 31 January is 1 February 00:30 in Paris: to 1 March 00:30 local.
		expect(recurringWindowEnd("2026-01-31T23:30:00.000Z", 1, "Europe/Paris")).toBe("2026-02-28T23:30:00.000Z");
	});

	it("lets in an event before the end, not at it; no window or no earlier event lets everything in", () => {
		const first = "2026-03-01T03:00:00.000Z";
		expect(withinRecurringWindow(1, first, "2026-03-29T01:59:59.999Z", "America/New_York")).toBe(true);
		expect(withinRecurringWindow(1, first, "2026-03-29T02:00:00.000Z", "America/New_York")).toBe(false);
		expect(withinRecurringWindow(1, first, "2026-03-29T02:00:00.000Z", "UTC")).toBe(true);
		expect(withinRecurringWindow(0, first, "2099-01-01T00:00:00.000Z", "UTC")).toBe(true);
		expect(withinRecurringWindow(1, null, "2099-01-01T00:00:00.000Z", "UTC")).toBe(true);
	});
});

describe("tierAmount", () => {
	const tiers = [
		{ fromcount: 3, amount: 20 },
		{ fromcount: 5, amount: 50 },
	];
	it("pays the rule's own amount below the first tier, then the tier with the largest fromcount <= n", () => {
		expect([1, 2, 3, 4, 5, 9].map((n) => tierAmount(10, tiers, n))).toEqual([10, 10, 20, 20, 50, 50]);
		expect(tierAmount(10, [], 100)).toBe(10);
	});
});
