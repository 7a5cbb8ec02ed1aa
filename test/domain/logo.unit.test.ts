import { describe, expect, it } from "vitest";
import { isShownLogo, keyOfLogoPath, logoKey, ownLogoKey, sniffLogo } from "../../src/domain/logo";

/** Uploaded logos' pure rules (src/domain/logo.ts): the type from the bytes, the served path, which URL is an app's own. */

const bytes = (...b: number[]) => Uint8Array.from(b);
const text = (s: string) => new TextEncoder().encode(s);
const HASH = "0123456789abcdef".repeat(4);

describe("sniffLogo", () => {
	it("tells PNG, JPEG and WebP by their signatures", () => {
		expect(sniffLogo(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0))).toBe("png");
		expect(sniffLogo(bytes(0xff, 0xd8, 0xff, 0xe1))).toBe("jpeg");
		expect(sniffLogo(text("RIFF\x10\x00\x00\x00WEBPVP8 "))).toBe("webp");
	});

	it("names SVG however it opens: BOM, XML declaration, comment, doctype, upper case", () => {
		for (const svg of [
			'<svg xmlns="http://www.w3.org/2000/svg"/>',
			'\uFEFF  <?xml version="1.0"?>\n<!-- logo -->\n<!DOCTYPE svg>\n<SVG>',
			"<svg>",
		])
			expect(sniffLogo(text(svg)), svg).toBe("svg");
	});

	it("refuses the rest: a truncated signature, RIFF that is not WebP, GIF, HTML, nothing", () => {
		expect(sniffLogo(bytes(0x89, 0x50, 0x4e, 0x47))).toBeNull();
		expect(sniffLogo(text("RIFF\x10\x00\x00\x00WAVEfmt "))).toBeNull();
		expect(sniffLogo(text("GIF89a"))).toBeNull();
		expect(sniffLogo(text("<html><svg>"))).toBeNull();
		expect(sniffLogo(bytes())).toBeNull();
	});
});

describe("the served path and the app's own logo", () => {
	it("keys a logo by app, hash and extension, and reads back only that shape", () => {
		expect(logoKey("app_1", HASH, "jpeg")).toBe(`app_1/${HASH}.jpg`);
		expect(keyOfLogoPath("app_1", `${HASH}.webp`)).toEqual({ key: `app_1/${HASH}.webp`, type: "webp" });
		for (const file of [`${HASH}.svg`, `${HASH.toUpperCase()}.png`, `${HASH.slice(1)}.png`, `${HASH}.png.png`, "..", `${HASH}.jpeg`])
			expect(keyOfLogoPath("app_1", file), file).toBeNull();
		expect(keyOfLogoPath("../x", `${HASH}.png`)).toBeNull();
	});

	it("finds the key only of a logo of this origin under the app's own prefix", () => {
		const origin = "https://refer.example.com";
		expect(ownLogoKey(`${origin}/logos/app_1/${HASH}.png`, origin, "app_1")).toBe(`app_1/${HASH}.png`);
		expect(ownLogoKey(`${origin}/logos/app_2/${HASH}.png`, origin, "app_1")).toBeNull();
		expect(ownLogoKey(`https://cdn.example.com/logos/app_1/${HASH}.png`, origin, "app_1")).toBeNull();
		expect(ownLogoKey(`${origin}/logos/app_1/x/${HASH}.png`, origin, "app_1")).toBeNull();
		expect(ownLogoKey(`${origin}/logos/app_1/${HASH}.png`, null, "app_1")).toBeNull();
		expect(ownLogoKey(null, origin, "app_1")).toBeNull();
	});

	it("shows https logos and this deployment's own over http, nothing else", () => {
		expect(isShownLogo("https://cdn.example.com/a.png", null)).toBe(true);
		expect(isShownLogo(`http://127.0.0.1:8787/logos/app_1/${HASH}.png`, "http://127.0.0.1:8787")).toBe(true);
		expect(isShownLogo("http://127.0.0.1:8787/other.png", "http://127.0.0.1:8787")).toBe(false);
		expect(isShownLogo("http://evil.example/logos/x.png", "http://127.0.0.1:8787")).toBe(false);
		expect(isShownLogo("javascript:alert(1)", "http://127.0.0.1:8787")).toBe(false);
		expect(isShownLogo(null, "http://127.0.0.1:8787")).toBe(false);
	});
});
