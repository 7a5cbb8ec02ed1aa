import { describe, expect, it } from "vitest";
import { admin, createApp, request } from "../support/api";

/** Issue 34: the app's logo and accent colour on its referral page (and so in the widget, which frames it). */

async function pageOf(app: Record<string, unknown>) {
	const created = await createApp({}, app);
	const ann = await created.api("register", { email: `ann-${crypto.randomUUID()}@example.com` });
	const link = await created.api("getsharepage", { userkey: ann.body.userkey });
	const url = new URL(link.body.url);
	const res = await request(`${url.pathname}${url.search}`);
	expect(res.status).toBe(200);
	return { ...created, res, html: await res.text() };
}

describe("a branded referral page", () => {
	it("shows the logo, allows images from its origin only, and paints the buttons in the accent colour", async () => {
		const created = await createApp();
		await admin("PATCH", `/apps/${created.appid}`, { logourl: "https://cdn.example.com/brand/logo.png", accentcolor: "#ffd700" });
		const ann = await created.api("register", { email: `ann-${crypto.randomUUID()}@example.com` });
		const link = new URL((await created.api("getsharepage", { userkey: ann.body.userkey })).body.url);
		const res = await request(`${link.pathname}${link.search}`);
		const html = await res.text();
		expect(html).toContain('<img class="logo" id="app-logo" src="https://cdn.example.com/brand/logo.png" alt="Test app"');
		expect(res.headers.get("content-security-policy")).toContain("img-src https://cdn.example.com;");
		// A light accent gets dark text, so the buttons stay readable (WCAG contrast).
		expect(html).toContain("button,.share a{background:#ffd700;color:#111111}");
	});

	it("without a brand: no image, no image source allowed, the page's own button colours", async () => {
		const { res, html } = await pageOf({});
		expect(html).not.toContain("<img");
		expect(res.headers.get("content-security-policy")).toContain("img-src 'none'");
		// The stylesheet ends with the logo's rule: no accent rule after it.
		expect(html).toContain("margin:0 0 .75rem}</style>");
	});
});
