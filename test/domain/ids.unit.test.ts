import { describe, expect, it } from "vitest";
import { newReferralCode, newUserKey, newWebhookSecret, REFERRAL_CODE_ALPHABET, randomString } from "../../src/domain/ids";

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
