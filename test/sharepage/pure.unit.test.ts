import { describe, expect, it } from "vitest";
import { negotiateLang } from "../../src/sharepage/i18n";
import { fontStack, safeColor, textColorOn } from "../../src/sharepage/style";
import { fillShareMessage, shareKind, shareTargets } from "../../src/sharepage/targets";

const action = (over: Record<string, unknown>) => ({
	campaignsocialactionid: 1,
	socialactionid: "99",
	socialactionname: "Other",
	sharemessage: "",
	sharetitle: "",
	shareimageurl: "",
	displayorder: 0,
	sharemessagetype: 0,
	...over,
});

describe("share targets", () => {
	it("fills every SHARE_URL and SHARE_CODE", () => {
		expect(fillShareMessage("SHARE_URL SHARE_CODE SHARE_URL", "https://s/r/AB", "AB")).toBe("https://s/r/AB AB https://s/r/AB");
	});

	it("knows the spec's channel ids, then falls back to the name, then to the link", () => {
		expect(["1", "2", "5", "14"].map((id) => shareKind({ socialactionid: id, socialactionname: "?" }))).toEqual([
			"facebook",
			"x",
			"mail",
			"link",
		]);
		expect(shareKind({ socialactionid: "7", socialactionname: "Email" })).toBe("mail");
		expect(shareKind({ socialactionid: "7", socialactionname: "WhatsApp" })).toBe("link");
	});

	it("sorts by displayorder, keeping the campaign order on ties, and adds the link when the message lacks it", () => {
		const targets = shareTargets(
			[
				action({ socialactionid: "5", socialactionname: "B", displayorder: 2, sharemessage: "Hi & welcome" }),
				action({ socialactionid: "2", socialactionname: "A", displayorder: 1 }),
				action({ socialactionid: "14", socialactionname: "C", displayorder: 2 }),
			],
			"https://s/r/AB",
			"AB",
			"Subject",
		);
		expect(targets.map((t) => t.label)).toEqual(["A", "B", "C"]);
		expect(new URL(targets[0]!.href).searchParams.get("text")).toBe("https://s/r/AB");
		expect(targets[1]!.href).toBe("mailto:?subject=Subject&body=Hi%20%26%20welcome%20https%3A%2F%2Fs%2Fr%2FAB");
	});
});

describe("page styling", () => {
	it("accepts #rrggbb only and picks a readable text colour", () => {
		expect(safeColor("#AABBCC")).toBe("#aabbcc");
		expect(["red", "#fff", "#12345g", "", null].map(safeColor)).toEqual(Array(5).fill("#ffffff"));
		expect(textColorOn("#ffffff")).toBe("#111111");
		expect(textColorOn("#112233")).toBe("#ffffff");
	});

	it("quotes a plain font name and drops anything that could leave the rule", () => {
		expect(fontStack("Open Sans")).toMatch(/^"Open Sans", system-ui/);
		for (const bad of ['Inter"', "a;b", "x}y", "<b>", ""]) expect(fontStack(bad)).toMatch(/^system-ui/);
	});
});

describe("negotiateLang", () => {
	it.each([
		[null, "en"],
		["", "en"],
		["fr", "fr"],
		["fr-CA", "fr"],
		["en-US,en;q=0.9,de;q=0.8", "en"],
		["de;q=0.5, es;q=0.9", "es"],
		["es;q=0, fr;q=0.1", "fr"],
		["ja, *;q=0.1", "en"],
		["de;q=abc, fr", "fr"],
	])("%s -> %s", (header, lang) => {
		expect(negotiateLang(header)).toBe(lang);
	});
});
