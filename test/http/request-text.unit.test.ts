import { describe, expect, it } from "vitest";
import { decodeRequestText, formUrlEncode, normalizeFields } from "../../src/http/request-text";

describe("decodeRequestText", () => {
	it("decodes + and %xx once", () => {
		expect(decodeRequestText("John+Doe")).toBe("John Doe");
		expect(decodeRequestText("Caf%C3%A9+%26+Bar")).toBe("Café & Bar");
		expect(decodeRequestText("100%2525")).toBe("100%25");
	});
	it("keeps a malformed escape as sent", () => {
		expect(decodeRequestText("100%")).toBe("100%");
		expect(decodeRequestText("50%+off%zz")).toBe("50% off%zz");
	});
	it("keeps + literal for email fields but decodes escapes", () => {
		expect(decodeRequestText("a+b@example.com", true)).toBe("a+b@example.com");
		expect(decodeRequestText("a%2Bb%40example.com", true)).toBe("a+b@example.com");
	});
});

describe("formUrlEncode", () => {
	it("encodes like a form: spaces as +, reserved characters escaped", () => {
		expect(formUrlEncode("Give $10 & get (more)!")).toBe("Give+%2410+%26+get+%28more%29%21");
		expect(decodeRequestText(formUrlEncode("Ünïcode + 100% ✓"))).toBe("Ünïcode + 100% ✓");
	});
});

describe("normalizeFields", () => {
	it("lower-cases names, folds alternative spellings and decodes nested text", () => {
		expect(
			normalizeFields({
				UserKey: "u1",
				EmailId: "A+B@x.com",
				UserIdInstore: "acct%201",
				AppUserName: "Jane+Doe",
				existinguser: true,
				rewardsList: [{ RewardDtlId: "r1", Message: "ok+then" }],
			}),
		).toEqual({
			userkey: "u1",
			email: "A+B@x.com",
			useraccountid: "acct 1",
			name: "Jane Doe",
			isexistinguser: true,
			rewardslist: [{ rewarddtlid: "r1", message: "ok then" }],
		});
	});
	it("prefers the canonical spelling when both are sent, in any order", () => {
		expect(normalizeFields({ existinguser: false, isExistingUser: true })).toEqual({ isexistinguser: true });
		expect(normalizeFields({ isexistinguser: true, ExistingUser: false })).toEqual({ isexistinguser: true });
	});
	it("never decodes credentials", () => {
		expect(normalizeFields({ apikey: "a+b", privatekey: "p%20" })).toEqual({ apikey: "a+b", privatekey: "p%20" });
	});
});
