import { describe, expect, it } from "vitest";
import { productMatches, productRestriction } from "../../src/rewards/products";

const ev = (productid: string | null, category: string | null) => ({ productid, category });

describe("productMatches", () => {
	it("lets a rule restricting nothing fire for every event, with or without a product", () => {
		const open = productRestriction(null, []);
		expect(productMatches(open, ev(null, null))).toBe(true);
		expect(productMatches(open, ev("A", "b"))).toBe(true);
	});

	it("fires a restricted rule only for an event that names a product or category", () => {
		for (const r of [productRestriction(["books"], []), productRestriction(null, [{ type: "exclude", productid: "A" }])]) {
			expect(productMatches(r, ev(null, null))).toBe(false);
		}
	});

	it("excludes a product even when its category is listed, and compares ignoring case and spaces", () => {
		const r = productRestriction([" Shoes "], [{ type: "exclude", productid: "sku-1" }]);
		expect(productMatches(r, ev("OTHER", "SHOES"))).toBe(true);
		expect(productMatches(r, ev(" SKU-1", "shoes"))).toBe(false);
		expect(productMatches(r, ev("OTHER", "hats"))).toBe(false);
	});

	it("fires for an included product in any category, or a listed category (either suffices)", () => {
		const r = productRestriction(["books"], [{ type: "include", productid: "gift" }]);
		expect(productMatches(r, ev("gift", "cards"))).toBe(true);
		expect(productMatches(r, ev(null, "Books"))).toBe(true);
		expect(productMatches(r, ev("pen", "office"))).toBe(false);
	});

	it("treats exclusions alone as every other product", () => {
		const r = productRestriction(null, [{ type: "exclude", productid: "gift" }]);
		expect(productMatches(r, ev("pen", null))).toBe(true);
		expect(productMatches(r, ev(null, "cards"))).toBe(true);
		expect(productMatches(r, ev("GIFT", null))).toBe(false);
	});

	it("ignores stored values of another shape (from before the fields had a meaning)", () => {
		const r = productRestriction("whatever", [{ sku: "A", exclude: true }, "B", { type: "exclude", productid: 7 }]);
		expect(productMatches(r, ev(null, null))).toBe(true);
	});
});
