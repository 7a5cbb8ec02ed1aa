import { describe, expect, it } from "vitest";
import { formatAmount, fromHundredths, percentOfHundredths, toHundredths } from "../../src/rewards/money";

describe("toHundredths", () => {
	it.each([
		[10, 1000],
		[0, 0],
		[0.1, 10],
		[0.07, 7],
		[1.005, 101],
		[2.675, 268],
		[1.004999, 100],
		[0.125, 13],
		[12.345, 1235],
		[99999.995, 10000000],
		[-1.005, -101],
		[1e-7, 0],
		[0.004, 0],
		[0.005, 1],
	])("%s -> %s (half-up on the decimal text, not the float)", (amount, hundredths) => {
		expect(toHundredths(amount)).toBe(hundredths);
	});

	it("refuses what is not a finite amount in range", () => {
		expect(toHundredths(Number.NaN)).toBeNull();
		expect(toHundredths(Number.POSITIVE_INFINITY)).toBeNull();
		expect(toHundredths(1e12)).toBeNull();
		expect(toHundredths("5" as unknown as number)).toBeNull();
	});
});

describe("fromHundredths / formatAmount", () => {
	it("gives back at most two decimals", () => {
		expect(fromHundredths(1235)).toBe(12.35);
		expect(fromHundredths(7)).toBe(0.07);
		expect(formatAmount(1000)).toBe("10");
		expect(formatAmount(1250)).toBe("12.5");
		expect(formatAmount(1)).toBe("0.01");
	});
});

describe("percentOfHundredths", () => {
	it.each([
		[15, 33.3, 500],
		[15, 33.29, 499],
		[10, 250, 2500],
		[2.5, 19.99, 50],
		[0.5, 1e-7, 0],
		[1e-7, 1e11, 10_000],
		[100, 0.015, 2],
		[-15, 33.3, -500],
	])("%s percent of %s -> %s hundredths", (percent, value, hundredths) => {
		expect(percentOfHundredths(percent, value)).toBe(hundredths);
	});
});
