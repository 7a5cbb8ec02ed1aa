import { describe, expect, it } from "vitest";
import { customIdToken, newReferralCode, newUserKey, newWebhookSecret, REFERRAL_CODE_ALPHABET, randomString } from "../../src/domain/ids";

describe("issued identifiers", () => {
	it("makes referral codes without ambiguous characters", () => {
		const codes = Array.from({ length: 2000 }, newReferralCode);
		for (const code of codes) expect(code).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
		expect(REFERRAL_CODE_ALPHABET).not.toMatch(/[01OIL]/);
		expect(new Set(codes).size).toBe(codes.length);
	});
	it("uses every letter of the alphabet (no modulo bias cutting some off)", () => {
		const seen = new Set(randomString(5000, "abc"));
		expect([...seen].sort()).toEqual(["a", "b", "c"]);
	});
	it("makes user keys and webhook secrets in their documented forms", () => {
		expect(newUserKey()).toMatch(/^u[0-9a-z]{19}$/);
		const secret = newWebhookSecret();
		expect(secret).toMatch(/^whsec_/);
		expect(atob(secret.slice(6))).toHaveLength(32);
	});
});

describe("customIdToken", () => {
	it("keeps integer customids as they were (the ids of events recorded before text customids)", () => {
		expect(customIdToken("1001")).toBe("1001");
		expect(customIdToken("-7")).toBe("-7");
	});
	it("turns any other customid into header- and path-safe text, one-to-one", () => {
		const ids = ["ord_8f3a-77", "ORD_8F3A-77", "ordre n°7 ✓", "a/b+c=d", "😀".repeat(100), "x", "1001 "];
		const tokens = ids.map(customIdToken);
		for (const token of tokens) expect(token).toMatch(/^x[A-Za-z0-9_-]+$/);
		expect(new Set(tokens).size).toBe(ids.length);
		expect(customIdToken("ordre n°7 ✓")).toBe(`x${Buffer.from("ordre n°7 ✓").toString("base64url")}`);
	});
});
