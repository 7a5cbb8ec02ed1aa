import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { launchBrowser } from "./browser";

// The dashboard in a real browser (Chromium from @sparticuz/chromium) against
// `wrangler dev`: the whole review flow, CSRF and sign-in checks, axe-core on
// every page, and screenshots at laptop and phone widths in screenshots/.

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const SHOTS = new URL("../../screenshots/", import.meta.url).pathname;
const today = () => new Date().toISOString().slice(0, 10);

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
	[service, browser] = await Promise.all([startService({ name: "dashboard" }), launchBrowser()]);
	page = await browser.newPage();
	await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
	mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
	await browser?.close();
	await service?.stop();
});

async function api(operation: string, body: Record<string, unknown>) {
	const res = await fetch(`${service.base}/saas/v1_0/${operation}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	return (await res.json()) as Record<string, any>;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 30_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${service.logs().slice(-2000)}`);
		await new Promise((r) => setTimeout(r, 250));
	}
}

const go = async (path: string) => {
	const res = await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" });
	return res?.status() ?? 0;
};

async function submit(selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}

/** Serious or critical axe-core violations of the current page. */
async function axeViolations(): Promise<string[]> {
	await page.evaluate(AXE);
	const result = (await page.evaluate(() => (globalThis as any).axe.run(document, { resultTypes: ["violations"] }))) as {
		violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
		passes: unknown[];
	};
	expect(result.passes.length).toBeGreaterThan(0); // axe really ran
	return result.violations
		.filter((v) => v.impact === "serious" || v.impact === "critical")
		.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

describe("dashboard in a browser", () => {
	const visited: [string, string][] = [];
	let appid = "";
	const keys = { apikey: "", privatekey: "" };
	let rewardId = "";

	it("refuses a wrong token, then signs in with the admin token", async () => {
		expect(await go("/dashboard")).toBe(200); // redirected to the sign-in form
		expect(page.url()).toContain("/dashboard/login");
		visited.push(["login", "/dashboard/login"]);
		await page.type("#f-token", "wrong-token");
		await submit("button[type=submit]");
		expect(await page.$eval("[role=alert]", (e) => e.textContent)).toContain("not the admin token");
		expect(page.url()).toContain("/dashboard/login");
		await page.type("#f-token", service.adminToken);
		await submit("button[type=submit]");
		expect(new URL(page.url()).pathname).toBe("/dashboard");
		const cookies = await browser.cookies();
		expect(cookies.find((c) => c.name === "dash_session")).toMatchObject({ httpOnly: true, sameSite: "Strict" });
	});

	it("creates an app and reads its keys once", async () => {
		visited.push(["apps", "/dashboard"]);
		await page.type("#f-name", "Browser shop");
		await page.type("#f-landingurl", "https://shop.example.com/join");
		await submit("form[action='/dashboard/apps'] button[type=submit]");
		const props = await page.$$eval("dl.props dd", (dds) => dds.map((d) => d.textContent?.trim() ?? ""));
		[appid, keys.apikey, keys.privatekey] = props as [string, string, string];
		expect(appid).toMatch(/^app_/);
		expect(keys.privatekey.length).toBeGreaterThan(20);
		visited.push(["app", `/dashboard/apps/${appid}`]);
	});

	it("creates a campaign with a rule through the form", async () => {
		await go(`/dashboard/apps/${appid}/campaigns/new`);
		visited.push(["campaign-new", `/dashboard/apps/${appid}/campaigns/new`]);
		await page.type("#f-campaignname", "Give $10");
		await page.type("#f-terms", "Be nice.");
		await page.type("#f-r0_eventname", "Signup");
		await page.type("#f-r0_reward", "10");
		await submit("form.grid button[type=submit]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Campaign created");
		const campaignPath = new URL(page.url()).pathname;
		expect(campaignPath).toMatch(/\/campaigns\/\d+$/);
		expect(await page.$eval("#f-r0_eventname", (e) => (e as HTMLInputElement).value)).toBe("Signup");
		visited.push(["campaign-edit", campaignPath], ["campaigns", `/dashboard/apps/${appid}/campaigns`]);
	});

	it("finds a Suspicious referral in the review queue, approves it, and checkrewardstatus says Approved", async () => {
		const creds = { apikey: keys.apikey, privatekey: keys.privatekey };
		const referrer = await api("register", { ...creds, email: "ann@example.com", phone: "+15550101" });
		expect(referrer.success).toBe(true);
		const friend = await api("register", {
			...creds,
			email: "ann.twin@example.com",
			phone: "+15550101",
			referrercode: referrer.referralcode,
		});
		expect(friend.success).toBe(true);
		const event = await api("registerconversionevent", {
			...creds,
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "1",
			growthhack: "SaaS_Referrals",
		});
		expect(event.success).toBe(true);
		rewardId = `${referrer.userkey}-1`;
		expect((await api("checkrewardstatus", { ...creds, rewarddtlid: rewardId })).rewardstatus).toBe("Suspicious");

		const review = `/dashboard/apps/${appid}/review`;
		visited.push(
			["review", review],
			["users", `/dashboard/apps/${appid}/users`],
			["user", `/dashboard/apps/${appid}/users/${referrer.userkey}`],
		);
		// The review queue reads the D1 projection the ledger writes right after the grant.
		await waitFor("the reward in the review queue", async () => {
			await go(review);
			return page.$(`input[name=ids][value="${rewardId}"]`);
		});
		const row = await page.$eval(`input[value="${rewardId}"]`, (e) => e.closest("tr")?.textContent ?? "");
		expect(row).toContain("Suspicious");
		await page.click(`input[value="${rewardId}"]`);
		await page.type("#f-message", "Same household, checked by phone");
		await submit("button[value=Approved]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Approved 1 reward(s)");
		const status = await api("checkrewardstatus", { ...creds, rewarddtlid: rewardId });
		expect(status).toMatchObject({ rewardstatus: "Approved", comment: "Same household, checked by phone" });
	});

	it("shows the day's signups in analytics", async () => {
		const analytics = `/dashboard/apps/${appid}/analytics`;
		visited.push(["analytics", analytics], ["deliveries", `/dashboard/apps/${appid}/deliveries`]);
		await go(analytics);
		expect(await page.$eval("[data-testid=total-signups]", (e) => e.textContent)).toBe("2");
		const todayRow = await page.$eval(`tr[data-day="${today()}"]`, (tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));
		expect(todayRow.slice(0, 5)).toEqual([today(), "0", "2", "1", "0"]);
		expect(await page.$("svg.chart polyline")).not.toBeNull();
		// Keyboard: the first Tab reaches the skip link, and it leads to the content.
		await page.keyboard.press("Tab");
		expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe("Skip to content");
		await page.keyboard.press("Enter");
		expect(new URL(page.url()).hash).toBe("#main");
	});

	it("answers 403 to a form POST without the CSRF token", async () => {
		await go(`/dashboard/apps/${appid}`);
		const status = await page.evaluate(async (id) => {
			const res = await fetch(`/dashboard/apps/${id}`, { method: "POST", body: new URLSearchParams({ name: "Hijacked" }) });
			return res.status;
		}, appid);
		expect(status).toBe(403);
		expect(await page.$eval("#f-name", (e) => (e as HTMLInputElement).value)).toBe("Browser shop");
	});

	it("has no serious accessibility violations and is screenshotted at 1280 and 390 px", async () => {
		// One more Suspicious reward, so the review queue has a row to look at.
		const creds = { apikey: keys.apikey, privatekey: keys.privatekey };
		const referrer = await api("register", { ...creds, email: "bo@example.com", phone: "+15550202" });
		const twin = await api("register", { ...creds, email: "bo+2@example.com", referrercode: referrer.referralcode });
		await api("registerconversionevent", {
			...creds,
			userkey: twin.userkey,
			eventname: "Signup",
			customid: "2",
			growthhack: "SaaS_Referrals",
		});
		await waitFor("a second reward in the review queue", async () => {
			await go(`/dashboard/apps/${appid}/review`);
			return page.$(`input[name=ids][value="${referrer.userkey}-1"]`);
		});
		const problems: string[] = [];
		for (const width of [1280, 390]) {
			await page.setViewport({ width, height: 900 });
			for (const [name, path] of visited) {
				if (name === "login") await page.deleteCookie({ name: "dash_session", url: service.base });
				expect(await go(path), path).toBe(200);
				if (width === 1280) problems.push(...(await axeViolations()).map((v) => `${name}: ${v}`));
				await page.screenshot({ path: `${SHOTS}dashboard-${name}-${width}.png`, fullPage: true });
				if (name === "login") {
					await page.type("#f-token", service.adminToken);
					await submit("button[type=submit]");
				}
			}
		}
		expect(problems).toEqual([]);
	});
});
