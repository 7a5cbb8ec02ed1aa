import { describe, expect, it } from "vitest";
import { ERASED, erasableValues, redact, redactJson } from "../../src/privacy/redact";

describe("redact", () => {
	const values = erasableValues(["Ann@Example.com", "Ann Lee", null, "", "5551234", "x"]);

	it("keeps only values long enough to match safely, lower-cased", () => {
		expect(values).toEqual(["ann@example.com", "ann lee", "5551234"]);
	});

	it("blanks equal strings, marks strings that contain one, keeps everything else", () => {
		const payload = {
			userkey: "u1",
			reward: { friendemail: "ann@example.com", friendname: "ANN LEE", reward: "10", amount: 10 },
			to: "Ann@example.com",
			text: "Hi Ann Lee, your code is ABC",
			other: { email: "bob@example.com", tags: ["5551234", "ok"] },
		};
		expect(redact(payload, { userkey: null, values })).toEqual({
			userkey: "u1",
			reward: { friendemail: "", friendname: "", reward: "10", amount: 10 },
			to: "",
			text: ERASED,
			other: { email: "bob@example.com", tags: ["", "ok"] },
		});
	});

	it("redactJson answers null when nothing changed", () => {
		const person = { userkey: null, values };
		expect(redactJson(JSON.stringify({ a: "bob" }), person)).toBeNull();
		expect(redactJson(JSON.stringify({ a: "ann@example.com" }), person)).toBe('{"a":""}');
		expect(redactJson(JSON.stringify({ a: "ann@example.com" }), { userkey: null, values: [] })).toBeNull();
	});

	it("blanks the personal fields of the object that names the person by userkey, not of others", () => {
		const payload = {
			friend: { userkey: "u1", useraccountid: "42", email: null, campaignid: 3 },
			referrer: { userkey: "u2", useraccountid: "42" },
			customid: "42",
		};
		expect(redact(payload, { userkey: "u1", values: [] })).toEqual({
			friend: { userkey: "u1", useraccountid: "", email: null, campaignid: 3 },
			referrer: { userkey: "u2", useraccountid: "42" },
			customid: "42",
		});
	});
});
