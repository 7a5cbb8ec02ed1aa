import { describe, expect, it } from "vitest";
import { checkBodyLimits, MAX_DEPTH, MAX_KEYS, MAX_LIST_ENTRIES } from "../../src/http/body-limits";
import { normalizeFields } from "../../src/http/request-text";
import { findTextViolations, textProblem } from "../../src/http/text-hygiene";

/** `{"x": [[[...]]]}` with `levels` arrays, built without recursion. */
function deep(levels: number): Record<string, unknown> {
	let inner: unknown = [];
	for (let i = 1; i < levels; i++) inner = [inner];
	return { x: inner };
}

describe("checkBodyLimits", () => {
	it("accepts a body exactly at the depth limit and refuses one level more", () => {
		expect(checkBodyLimits(deep(MAX_DEPTH - 1))).toBeNull();
		expect(checkBodyLimits(deep(MAX_DEPTH))).toMatchObject({ limit: "depth" });
	});
	it("walks 20,000 levels without overflowing the stack", () => {
		const parsed = JSON.parse(`{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}`);
		expect(checkBodyLimits(parsed)).toMatchObject({ limit: "depth", field: expect.stringMatching(/^x(\.0)+$/) });
	});
	it("counts keys over the whole body", () => {
		const wide = (n: number) => ({ list: [Object.fromEntries(Array.from({ length: n - 1 }, (_, i) => [`k${i}`, 1]))] });
		expect(checkBodyLimits(wide(MAX_KEYS))).toBeNull();
		expect(checkBodyLimits(wide(MAX_KEYS + 1))).toMatchObject({ limit: "keys" });
	});
	it("limits every list, naming it", () => {
		expect(checkBodyLimits({ rewarddtlids: Array(MAX_LIST_ENTRIES).fill("a") })).toBeNull();
		expect(checkBodyLimits({ rewarddtlids: Array(MAX_LIST_ENTRIES + 1).fill("a") })).toMatchObject({
			limit: "list",
			field: "rewarddtlids",
		});
	});
});

describe("text hygiene", () => {
	it("refuses C0 controls, CR, DEL, NUL and lone surrogates; keeps TAB and ordinary Unicode", () => {
		for (const bad of ["a\u0000b", "a\rb", "a\nb", "a\u007fb", "a\u001bb", "\ud800", "x\udc00y", "\ud83dx"]) {
			expect(textProblem("name", bad), JSON.stringify(bad)).not.toBeNull();
		}
		for (const good of ["a\tb", "Zoë 😀", "日本語", "%0D", ""]) expect(textProblem("name", good), good).toBeNull();
	});
	it("allows LF (not CR) in free-text fields", () => {
		expect(textProblem("messageforfriend", "line 1\nline 2")).toBeNull();
		expect(textProblem("extrainfo", "a\nb")).toBeNull();
		expect(textProblem("messageforfriend", "a\r\nb")).not.toBeNull();
		expect(textProblem("name", "a\nb")).not.toBeNull();
	});
	it("names nested fields, after URL-decoding", () => {
		const body = normalizeFields({
			AppUserName: "Mallory%0D%0ABcc:+victim@evil.test",
			rewardslist: [{ rewarddtlid: "r1", message: "ok\nfine" }, { rewarddtlid: "r\u00002" }],
		});
		expect(findTextViolations(body).map((v) => v.field)).toEqual(["name", "rewardslist.1.rewarddtlid"]);
	});
});

describe("normalizeFields and prototype keys", () => {
	it("keeps __proto__ a plain field: it cannot supply other fields through the prototype", () => {
		const body = normalizeFields(JSON.parse('{"__proto__": {"userkey": "stolen"}, "email": "a@b.c"}'));
		expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
		expect(body.userkey).toBeUndefined();
		expect(Object.hasOwn(body, "__proto__")).toBe(true);
	});
});
