import { mkdirSync } from "node:fs";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";

// The dashboard in a real browser (Chromium from @sparticuz/chromium) against
// `wrangler dev`: the whole review flow, CSRF and sign-in checks, axe-core on
// every page, and screenshots at laptop and phone widths in screenshots/.

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

/** An admin API read with the service's admin token. */
async function admin(path: string) {
	const res = await fetch(`${service.base}/admin/v1${path}`, { headers: { authorization: `Bearer ${service.adminToken}` } });
	expect(res.status).toBe(200);
	return (await res.json()) as Record<string, any>;
}

const go = async (path: string) => {
	const res = await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" });
	return res?.status() ?? 0;
};

/** The sign-in form of the admin token (the page's first form is the members'). */
const TOKEN_SIGN_IN = "form[action='/dashboard/login'] button[type=submit]";

async function submit(selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}

describe("dashboard in a browser", () => {
	const visited: [string, string][] = [];
	let appid = "";
	const keys = { apikey: "", privatekey: "" };
	let rewardId = "";
	let friendKey = "";

	it("refuses a wrong token, then signs in with the admin token", async () => {
		expect(await go("/dashboard")).toBe(200); // redirected to the sign-in form
		expect(page.url()).toContain("/dashboard/login");
		visited.push(["login", "/dashboard/login"]);
		await page.type("#f-token", "wrong-token");
		await submit(TOKEN_SIGN_IN);
		expect(await page.$eval("[role=alert]", (e) => e.textContent)).toContain("not the admin token");
		expect(page.url()).toContain("/dashboard/login");
		await page.type("#f-token", service.adminToken);
		await submit(TOKEN_SIGN_IN);
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

	it("creates a campaign with two rules, a fraud setting and reward type 'referrer only' through the form, and makes it the default", async () => {
		// The app's first campaign (made through the API) is its default; the new one must be made the default to go live.
		const first = await fetch(`${service.base}/admin/v1/apps/${appid}/campaigns`, {
			method: "POST",
			headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
			body: JSON.stringify({ campaignname: "Launch", rewardrules: [] }),
		});
		expect(first.status).toBe(201);
		await go(`/dashboard/apps/${appid}/campaigns/new`);
		visited.push(["campaign-new", `/dashboard/apps/${appid}/campaigns/new`]);
		await page.type("#f-campaignname", "Give $10");
		// Enter in a text area: the browser sends the line break as CRLF, which the service stores as LF.
		await page.type("#f-terms", "Be nice.\nOne reward per friend.");
		await page.type("#f-r0_eventname", "Signup");
		await page.type("#f-r0_reward", "10");
		// A second rule in the same save: the form offers several blank rows.
		await page.select("#f-r1_rewardusertype", "Friend");
		await page.type("#f-r1_eventname", "Signup");
		await page.type("#f-r1_reward", "5");
		// Velocity only flags from now on; the shared phone below still holds the reward for review.
		await page.click("#fraud-settings summary"); // folded in the builder's Rules section (issue 48)
		await page.click("input[name=suspicioussignals][value=velocity]");
		// The option is picked by its label, as an operator would; the test then checks what was stored.
		const referrerOnly = await page.$$eval("#f-rewardtype option", (options) =>
			options.filter((o) => o.textContent?.includes("referrer only")).map((o) => (o as HTMLOptionElement).value),
		);
		expect(referrerOnly).toHaveLength(1);
		await page.select("#f-rewardtype", referrerOnly[0] as string);
		await submit("form.builder button[name=save]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Campaign created");
		const campaignPath = new URL(page.url()).pathname;
		expect(campaignPath).toMatch(/\/campaigns\/\d+$/);
		expect(await page.$eval("#f-r0_eventname", (e) => (e as HTMLInputElement).value)).toBe("Signup");
		expect(await page.$eval("#f-r1_eventname", (e) => (e as HTMLInputElement).value)).toBe("Signup");
		expect(await page.$eval("#f-rewardtype option:checked", (e) => e.textContent)).toContain("referrer only");
		const stored = await admin(campaignPath.replace("/dashboard", ""));
		// The stored value the rules engine reads (rewards/rules.ts rewardTypeAllows): 1 pays the referrer only.
		expect(stored).toMatchObject({ rewardtype: 1, velocitythreshold: 20 });
		expect(stored.suspicioussignals).not.toContain("velocity");
		expect(stored.suspicioussignals).toContain("same_phone");
		expect(stored.rewardrules.map((r: { rewardusertype: string }) => r.rewardusertype)).toEqual(["Referrer", "Friend"]);
		expect(stored.terms).toBe("Be nice.\nOne reward per friend.");
		await submit("form[action$='/default'] button[type=submit]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("This is now the default campaign");
		expect(await page.$eval("[data-testid=default-campaign]", (e) => e.textContent)).toContain("default campaign");
		expect((await admin(`/apps/${appid}`)).defaultcampaignid).toBe(stored.campaignid);
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
		// Both joined the campaign made the default in the dashboard, not the app's first one.
		const defaultId = (await admin(`/apps/${appid}`)).defaultcampaignid;
		expect([referrer.saascampaignid, friend.saascampaignid]).toEqual([String(defaultId), String(defaultId)]);
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
		// Who referred whom: the friend's email beside the referrer's, and why the reward is held.
		expect(row).toContain("ann.twin@example.com");
		expect(row).toContain("ann@example.com");
		expect(row).toContain("same_phone");
		// Reward type 1 (referrer only): the friend's rule paid nothing.
		expect((await api("checkrewardstatus", { ...creds, rewarddtlid: `${friend.userkey}-1` })).success).toBe(false);
		// Keyboard: the row's checkbox is reached and ticked with the space bar.
		await page.focus(`input[value="${rewardId}"]`);
		await page.keyboard.press("Space");
		expect(await page.$eval(`input[value="${rewardId}"]`, (e) => (e as HTMLInputElement).checked)).toBe(true);
		await page.type("#f-message", "Same household, checked by phone");
		await submit("button[value=Approved]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Approved 1 reward(s)");
		// Post/redirect/get to a fresh queue: the approved reward is gone from it at once.
		expect(new URL(page.url()).pathname).toBe(review);
		expect(await page.$(`input[name=ids][value="${rewardId}"]`)).toBeNull();
		const status = await api("checkrewardstatus", { ...creds, rewarddtlid: rewardId });
		expect(status).toMatchObject({ rewardstatus: "Approved", comment: "Same household, checked by phone" });
		friendKey = friend.userkey;
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

	it("counts the day in the app's time zone, set in the app's settings", async () => {
		// A zone whose date differs from UTC's right now: UTC+14 from 10:00 UTC, else UTC-11.
		const zone = new Date().getUTCHours() >= 10 ? "Pacific/Kiritimati" : "Pacific/Pago_Pago";
		const local = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(
			new Date(),
		);
		expect(local).not.toBe(today());
		await go(`/dashboard/apps/${appid}`);
		await page.$eval("#f-timezone", (e) => {
			(e as HTMLInputElement).value = "";
		});
		await page.type("#f-timezone", zone);
		await submit("form[aria-labelledby=settings] button[type=submit]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Settings saved");
		const creds = { apikey: keys.apikey, privatekey: keys.privatekey };
		const purchase = await api("registerconversionevent", {
			...creds,
			userkey: friendKey,
			eventname: "Purchase",
			customid: "3",
			transactionvalue: "20",
			growthhack: "SaaS_Referrals",
		});
		expect(purchase.success).toBe(true);
		// The conversion's counters follow its answer by a moment (they ride in the ledger's projection message, issue
		// 49): the page is read again until the local day's row counts it, and then it must count it on that day.
		const row = await waitFor("the conversion counted on the local day", async () => {
			await go(`/dashboard/apps/${appid}/analytics`);
			const cells = await page.$$eval(`tr[data-day="${local}"]`, (trs) =>
				trs.flatMap((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
			);
			return cells[4] === "1" ? cells : undefined;
		});
		expect(await page.$eval("[data-testid=timezone]", (e) => e.textContent)).toContain(zone);
		// Day, unique clicks, signups, referred, conversions: today's sign-ups and the conversion on the local day.
		expect(row.slice(0, 5)).toEqual([local, "0", "2", "1", "1"]);
		expect(await page.$eval('tr[data-funnel="all"]', (tr) => tr.textContent)).toContain("100%");
	});

	it("shows the leaderboard, its period chosen by a plain form", async () => {
		expect(await go(`/dashboard/apps/${appid}/leaderboard`)).toBe(200);
		visited.push(["leaderboard", `/dashboard/apps/${appid}/leaderboard`]);
		await page.select("#f-period", "week");
		await submit("form.grid button[type=submit]");
		expect(new URL(page.url()).searchParams.get("period")).toBe("week");
		expect(await page.$eval("#f-period", (e) => (e as HTMLSelectElement).value)).toBe("week");
		expect(await page.$eval("caption", (e) => e.textContent)).toBe("Leaderboard");
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
				if (width === 1280) problems.push(...(await seriousAxeViolations(page)).map((v) => `${name}: ${v}`));
				await page.screenshot({ path: `${SHOTS}dashboard-${name}-${width}.png`, fullPage: true });
				if (name === "login") {
					await page.type("#f-token", service.adminToken);
					await submit(TOKEN_SIGN_IN);
				}
			}
		}
		expect(problems).toEqual([]);
	});

	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
