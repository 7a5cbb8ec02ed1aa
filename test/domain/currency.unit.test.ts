import { describe, expect, it } from "vitest";
import { currencyExponent, hundredthsToMinor, isCurrencyCode, minorToUnits } from "../../src/domain/currency";
import { open, seal } from "../../src/domain/secret-box";

describe("currency minor units (Stripe amounts)", () => {
	it("knows the exponent of two-, zero- and three-decimal currencies, in any case", () => {
		expect([currencyExponent("usd"), currencyExponent("EUR"), currencyExponent("jpy"), currencyExponent("KWD")]).toEqual([2, 2, 0, 3]);
	});

	it("converts Stripe's minor units to whole units", () => {
		expect(minorToUnits(1999, "usd")).toBe(19.99);
		expect(minorToUnits(500, "JPY")).toBe(500);
		expect(minorToUnits(1500, "kwd")).toBe(1.5);
	});

	it("converts the service's hundredths to minor units, rounding zero-decimal currencies half away from zero", () => {
		expect(hundredthsToMinor(1050, "usd")).toBe(1050);
		expect(hundredthsToMinor(1050, "jpy")).toBe(11);
		expect(hundredthsToMinor(1049, "jpy")).toBe(10);
		expect(hundredthsToMinor(-1050, "jpy")).toBe(-11);
		expect(hundredthsToMinor(150, "kwd")).toBe(1500);
	});

	it("takes a reward unit as a currency only when it is a 3-letter code", () => {
		expect([isCurrencyCode("USD"), isCurrencyCode("points"), isCurrencyCode("%")]).toEqual([true, false, false]);
	});
});

describe("secret box", () => {
	it("opens what it sealed, only under the same key and context, and never seals twice alike", async () => {
		const sealed = await seal("key-1", "stripe-secretkey:app_1", "sk_test_123");
		expect(sealed).toMatch(/^v1\./);
		expect(sealed).not.toContain("sk_test_123");
		expect(await seal("key-1", "stripe-secretkey:app_1", "sk_test_123")).not.toBe(sealed);
		expect(await open("key-1", "stripe-secretkey:app_1", sealed)).toBe("sk_test_123");
		await expect(open("key-2", "stripe-secretkey:app_1", sealed)).rejects.toThrow();
		await expect(open("key-1", "stripe-secretkey:app_2", sealed)).rejects.toThrow();
	});
});
