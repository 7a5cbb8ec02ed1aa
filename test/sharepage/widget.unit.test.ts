import { describe, expect, it, vi } from "vitest";
import { WIDGET_JS } from "../../src/sharepage/widget";

/**
 * Runs widget.js as a browser would, against a minimal DOM: a host page at
 * `pageUrl` with the script tag loaded from `scriptSrc` and `data-url`.
 * Answers the iframes it inserted and what it warned.
 */
function runWidget(dataUrl: string, { pageUrl = "https://shop.example/product", scriptSrc = "https://refer.example/widget.js" } = {}) {
	const inserted: { src: string }[] = [];
	const warnings: string[] = [];
	const script = {
		src: scriptSrc,
		getAttribute: (name: string) => (name === "data-url" ? dataUrl : null),
		nextSibling: null,
		parentNode: { insertBefore: (node: { src: string }) => inserted.push(node) },
	};
	const document = {
		currentScript: script,
		baseURI: pageUrl,
		createElement: () => ({ src: "", title: "", style: {} as Record<string, string> }),
	};
	const window = { addEventListener: vi.fn(), console: {} };
	const console = { warn: (message: string) => warnings.push(message) };
	new Function("document", "window", "console", WIDGET_JS)(document, window, console);
	return { frames: inserted.map((f) => f.src), warnings };
}

describe("widget.js only frames https: or same-origin page URLs", () => {
	it("refuses a javascript: data-url (it would run in the host page), in any spelling", () => {
		for (const url of ["javascript:alert(document.domain)", "JaVaScRiPt:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)"]) {
			expect(runWidget(url).frames, url).toEqual([]);
		}
		expect(runWidget("javascript:alert(1)").warnings).toEqual([
			"widget.js: data-url refused: only https: or same-origin page URLs are framed",
		]);
	});

	it("refuses data:, blob: and plain http: pages of other origins", () => {
		for (const url of ["data:text/html,<script>alert(1)</script>", "blob:https://evil.example/x", "http://evil.example/share/a/b"]) {
			expect(runWidget(url).frames, url).toEqual([]);
		}
	});

	it("frames an https: page, and an http: page on the origin of widget.js or of the host page", () => {
		expect(runWidget("https://refer.example/share/app_1/u_1?exp=1&sig=x").frames).toEqual([
			"https://refer.example/share/app_1/u_1?exp=1&sig=x",
		]);
		const local = { pageUrl: "http://127.0.0.1:3000/embed", scriptSrc: "http://127.0.0.1:8787/widget.js" };
		expect(runWidget("http://127.0.0.1:8787/share/a/b", local).frames).toEqual(["http://127.0.0.1:8787/share/a/b"]);
		expect(runWidget("/share/a/b", local).frames).toEqual(["http://127.0.0.1:3000/share/a/b"]);
		expect(runWidget("http://127.0.0.1:9999/share/a/b", local).frames).toEqual([]);
	});
});
