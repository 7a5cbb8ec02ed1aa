import { describe, expect, it } from "vitest";
import { displayName, FIRST_NAME_MAX, nameWords } from "../../src/domain/display-name";
import { rankBoard } from "../../src/domain/leaderboard";

/** Issue 47: a public board shows names derived from the stored one, never copied. */
describe("display names on a public board", () => {
	it("never shows anything that looks like an email", () => {
		expect(displayName("john.doe@corp.com")).toBe("A referrer");
		expect(displayName("John Doe <john.doe@corp.com>")).toBe("John D.");
		expect(displayName("<john.doe@corp.com> John Doe")).toBe("John D.");
		expect(displayName("John john.doe＠corp.com")).toBe("John");
		expect(displayName("Ann mailto:ann@x.io")).toBe("Ann");
		expect(displayName("john.doe @ corp.com")).toBe("A referrer");
		expect(displayName("Ann Lee john.doe ＠ corp.com")).toBe("Ann L.");
		expect(displayName("Ann https://evil.example/x")).toBe("Ann");
		for (const style of ["firstinitial", "initials", "numbered"] as const)
			expect(displayName("john.doe@corp.com Doe", style, 4)).not.toMatch(/@|corp|john/i);
	});

	it("removes control and bidi characters", () => {
		expect(displayName("Ann\u202Eeil Lee")).toBe("Anneil L.");
		expect(displayName("\u2067Ann\u2069 \u200BLee\u0000")).toBe("Ann L.");
		expect(displayName("Ann\nLee")).toBe("Ann L.");
		expect(displayName("\u202E\u202D")).toBe("A referrer");
		for (const shown of [displayName("Ann\u202ELee Bo"), displayName("\u200FAnn \u061CLee", "initials", 1)])
			expect(shown).not.toMatch(/[\p{Cc}\p{Cf}]/u);
	});

	it("caps the length: a 200-character name is cut", () => {
		const long = "A".repeat(200);
		expect(displayName(long)).toBe("A".repeat(FIRST_NAME_MAX));
		expect(displayName(`${long} ${"B".repeat(200)}`)).toBe(`${"A".repeat(FIRST_NAME_MAX)} B.`);
		expect(Array.from(displayName(`${"𝒜".repeat(300)} Lee`)).length).toBe(FIRST_NAME_MAX + 3);
		// Long input is read only so far: the work is bounded whatever the stored name.
		expect(displayName(`Ann ${"x ".repeat(100_000)}Lee`)).toBe("Ann X.");
	});

	it("is 'First L.' by default, from letters only (no '<.' initial)", () => {
		expect(displayName("Ann Lee")).toBe("Ann L.");
		expect(displayName("  Ann   Marie  lee ")).toBe("Ann L.");
		expect(displayName("Cher")).toBe("Cher");
		expect(displayName("Élodie émile")).toBe("Élodie É.");
		expect(displayName('"Ann" (Lee)')).toBe("Ann L.");
		expect(displayName("Ann 123 <>")).toBe("Ann");
		expect(displayName(null)).toBe("A referrer");
	});

	it("follows the operator's style: initials, or Referrer #n by rank", () => {
		expect(displayName("Ann Marie Lee", "initials")).toBe("A. L.");
		expect(displayName("cher", "initials")).toBe("C.");
		expect(displayName("", "initials")).toBe("A referrer");
		expect(displayName("Ann Lee", "numbered", 3)).toBe("Referrer #3");
		expect(rankBoard([{ userkey: "u1", name: "Ann Lee", friends: 2, earned: 1 }], "numbered")[0]?.displayname).toBe("Referrer #1");
		expect(rankBoard([{ userkey: "u1", name: "Ann Lee", friends: 2, earned: 1 }], "initials")[0]?.displayname).toBe("A. L.");
	});

	it("keeps only words that hold a letter, punctuation around them trimmed", () => {
		expect(nameWords("  (Ann) 42 -- Lee, ")).toEqual(["Ann", "Lee"]);
	});
});
