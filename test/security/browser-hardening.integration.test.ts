import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { frameOrigin } from "../../src/sharepage/routes";
import { ADMIN_TOKEN, admin, createApp, request } from "../support/api";

// Issue 21, items 5 and 6: redirect targets stay on the site, frame origins
// are exact, and every HTML response carries nosniff and a Referrer-Policy.

const BASE = "http://service.test";
const page = (path: string, init: RequestInit = {}) =>
	exports.default.fetch(new Request(`${BASE}${path}`, { redirect: "manual", ...init }));
const cookieOf = (res: Response, name: string) =>
	res.headers
		.getSetCookie()
		.find((c) => c.startsWith(`${name}=`))
		?.split(";")[0];
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

async function signIn() {
	const login = await page("/dashboard/login");
	const res = await page("/dashboard/login", {
		method: "POST",
		headers: { cookie: cookieOf(login, "dash_login") ?? "" },
		body: new URLSearchParams({ _csrf: csrfOf(await login.text()), token: ADMIN_TOKEN }),
	});
	const cookie = cookieOf(res, "dash_session") ?? "";
	const home = await page("/dashboard", { headers: { cookie } });
	return { cookie, csrf: csrfOf(await home.text()) };
}

describe("redirect targets after a review action stay under /dashboard on this site", () => {
	it("the open-redirect strings of issue 21 (dot segments, backslashes) go back to the review queue", async () => {
		const { cookie, csrf } = await signIn();
		const { appid } = await createApp();
		const review = `/dashboard/apps/${appid}/review`;
		for (const ret of [
			`${review}/../../../..//evil.example/x`,
			`${review}/..\\..\\..\\..\\\\evil.example/x`,
			`${review}/../../../../\\evil.example/x`,
			`${review}\\..\\..\\..\\..\\\\evil.example/x`,
			`${review}/%2e%2e/%2e%2e/%2e%2e/%2e%2e//evil.example/x`,
		]) {
			for (const ids of [[], ["no-such-reward"]]) {
				const body = new URLSearchParams({ _csrf: csrf, return: ret, action: "Approved" });
				for (const id of ids) body.append("ids", id);
				const res = await page(review, { method: "POST", headers: { cookie }, body });
				expect(res.status, ret).toBe(303);
				const location = res.headers.get("location") ?? "";
				const resolved = new URL(location, BASE);
				expect(resolved.origin, `${ret} -> ${location}`).toBe(BASE);
				expect(resolved.pathname, `${ret} -> ${location}`).toBe(review);
				expect(location.startsWith("//") || location.includes("\\"), location).toBe(false);
			}
		}
		// A real return within the queue is kept.
		const body = new URLSearchParams({ _csrf: csrf, return: `${review}?campaignid=1`, action: "Approved" });
		const kept = await page(review, { method: "POST", headers: { cookie }, body });
		expect(kept.headers.get("location")).toMatch(new RegExp(`^${review}\\?campaignid=1&error=`));
	});
});

describe("frame origins are exact origins", () => {
	it("refuses wildcards and other non-origins, and reduces a URL to its origin", async () => {
		const { appid } = await createApp();
		for (const frameorigin of [
			"https://*.evil.example",
			"https://*",
			"https://user:pw@shop.example",
			"https://shop.example;frame-ancestors *",
		]) {
			const res = await admin("PATCH", `/apps/${appid}`, { frameorigin });
			expect(res.status, frameorigin).toBe(400);
			expect(res.body.fields, frameorigin).toContain("frameorigin");
		}
		const ok = await admin("PATCH", `/apps/${appid}`, { frameorigin: "https://Shop.Example:8443/embed?x=1" });
		expect(ok.body.frameorigin).toBe("https://shop.example:8443");
	});

	it("a pattern stored before the rule frames nothing (frame-ancestors 'none')", () => {
		expect(frameOrigin({ frameorigin: "https://*.evil.example", landingurl: "https://shop.example/join" })).toBeNull();
		expect(frameOrigin({ frameorigin: null, landingurl: "https://shop.example/join?x=1" })).toBe("https://shop.example");
		expect(frameOrigin({ frameorigin: "https://app.example.org", landingurl: null })).toBe("https://app.example.org");
	});
});

describe("every HTML response carries X-Content-Type-Options: nosniff and a Referrer-Policy", () => {
	it("dashboard pages, sign-in, its error pages, the share page's refusal and /docs", async () => {
		const { cookie } = await signIn();
		const { appid } = await createApp();
		const responses: [string, Response][] = [
			["/dashboard/login", await page("/dashboard/login")],
			["/dashboard", await page("/dashboard", { headers: { cookie } })],
			[`/dashboard/apps/${appid}/analytics`, await page(`/dashboard/apps/${appid}/analytics`, { headers: { cookie } })],
			["/dashboard/apps/app_missing (404)", await page("/dashboard/apps/app_missing", { headers: { cookie } })],
			["/dashboard (signed out POST)", await page("/dashboard/apps/x", { method: "POST" })],
			["/share (bad signature)", await request(`/share/${appid}/u_x?exp=1&sig=x`)],
			["/docs", await request("/docs")],
		];
		for (const [what, res] of responses) {
			expect(res.headers.get("content-type"), what).toMatch(/^text\/html/);
			expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
			expect(res.headers.get("referrer-policy"), what).toMatch(/^(no-referrer|same-origin|strict-origin)/);
		}
		// The API's answers are not sniffed either.
		expect((await request("/health")).headers.get("x-content-type-options")).toBe("nosniff");
		expect((await request("/widget.js")).headers.get("x-content-type-options")).toBe("nosniff");
	});
});
