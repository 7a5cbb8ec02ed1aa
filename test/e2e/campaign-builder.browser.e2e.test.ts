import { mkdirSync } from "node:fs";
import type { Browser, HTTPRequest, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, drawSteadyOrigin, launchBrowser, seriousAxeViolations } from "./browser";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 48, the campaign builder and archive, in a real browser against
// `wrangler dev`, signed in with the admin token: one form with four
// mistakes, the live and the no-script preview, the warning before saving a
// campaign nobody can share, and archive / restore / delete. Each page opened
// is checked with axe-core; the screenshots of docs/operators.md ("Building
// a campaign") are taken here, so a run regenerates them.

const IMAGES = new URL("../../docs/images/", import.meta.url).pathname;

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
let page: Page;
const context = () => service.logs().slice(-2000);
const client = serviceClient(() => service);
const app = { appid: "", apikey: "", privatekey: "", keep: 0, unused: 0, joined: 0, ann: "" };

const starting = { service: null as ReturnType<typeof startService> | null, browser: null as Promise<Browser> | null };

beforeAll(async () => {
	starting.service = startService({ name: "builder" });
	starting.browser = launchBrowser();
	[service, browser] = await Promise.all([starting.service, starting.browser]);
	page = await browser.newPage();
	await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
	page.on("dialog", (dialog) => void dialog.accept()); // app.js asks before archiving or deleting
	mkdirSync(IMAGES, { recursive: true });
	const created = await client.admin("POST", "/apps", { name: "Builder shop", landingurl: "https://shop.example.com/" });
	expect(created.status).toBe(201);
	Object.assign(app, { appid: created.body.appid, apikey: created.body.apikey, privatekey: created.body.privatekey });
	const campaign = async (campaignname: string) =>
		(await client.admin("POST", `/apps/${app.appid}/campaigns`, { campaignname, rewardrules: [] })).body.campaignid as number;
	app.keep = await campaign("Evergreen");
	app.unused = await campaign("Typo campaign");
	app.joined = await campaign("Summer 2025");
	// A user joins "Summer 2025" (named at registration), so it cannot be deleted.
	const api = (op: string, body: Record<string, unknown>) => client.api(op, { apikey: app.apikey, privatekey: app.privatekey, ...body });
	const ann = (await api("register", { email: "ann@example.com", campaignid: app.joined })).body;
	expect(ann.saascampaignid).toBe(String(app.joined));
	app.ann = ann.userkey;
	await page.goto(`${service.base}/dashboard/login`, { waitUntil: "domcontentloaded" });
	await page.type("#f-token", service.adminToken);
	await submit("form[action='/dashboard/login'] button[type=submit]");
}, 240_000);

afterAll(async () => {
	await (await starting.browser?.catch(() => null))?.close();
	await (await starting.service?.catch(() => null))?.stop();
});

const go = async (path: string) => (await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" }))?.status() ?? 0;
async function submit(selector: string) {
	const [res] = await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
	return res?.status() ?? 0;
}
const path = (rest = "") => `/dashboard/apps/${app.appid}${rest}`;
const value = (selector: string) => page.$eval(selector, (e) => (e as HTMLInputElement).value);
const text = (selector: string) => page.$eval(selector, (e) => e.textContent?.replace(/\s+/g, " ").trim() ?? "");
/** Sets a field the way typing does, for inputs puppeteer cannot type into (datetime-local, colour). */
const setValue = (selector: string, v: string) =>
	page.$eval(
		selector,
		(e, typed) => {
			(e as HTMLInputElement).value = typed;
			e.dispatchEvent(new Event("input", { bubbles: true }));
		},
		v,
	);
const campaignNames = async () =>
	((await client.admin("GET", `/apps/${app.appid}/campaigns`)).body.campaigns as { campaignname: string }[]).map((k) => k.campaignname);
async function axeClean() {
	expect(await seriousAxeViolations(page)).toEqual([]);
	expect(brokenAssets(browser)).toEqual([]);
}

describe("the campaign builder", () => {
	it("reports four mistakes at once, each on its marked field, and keeps everything typed, tiers included", async () => {
		expect(await go(path("/campaigns/new"))).toBe(200);
		await axeClean();
		// Mistake 1: no name. Mistake 2: the end before the start. Mistake 3: -3 hold days. Mistake 4: a tier from friend 1.
		await page.type("#f-offertitle", "Give $10, get $20");
		await setValue("#f-campaignstartdate", "2030-03-10T09:00");
		await setValue("#f-campaignenddate", "2030-03-01T09:00");
		await page.type("#f-r0_eventname", "Transaction");
		await page.type("#f-r0_reward", "10");
		await page.click("#r0_tiers summary"); // the tiers fold open, as an operator opens them
		await page.type("#f-r0_t0_fromcount", "1");
		await page.type("#f-r0_t0_reward", "20");
		await page.type("#f-r0_t1_fromcount", "5");
		await page.type("#f-r0_t1_reward", "50");
		await page.$eval("#f-holddays", (e) => {
			(e as HTMLInputElement).value = "";
		});
		await page.type("#f-holddays", "-3");
		expect(await submit("button[name=save]")).toBe(400);

		const marked = await page.$$eval("[aria-invalid=true]", (els) => els.map((e) => e.id));
		expect(marked.sort()).toEqual(["f-campaignenddate", "f-campaignname", "f-holddays", "f-r0_t0_fromcount"]);
		for (const id of marked) {
			// Each field names its message, and the summary at the top links to the field.
			const message = await page.$eval(`#${id}`, (e) => {
				const ids = (e.getAttribute("aria-describedby") ?? "").split(" ");
				return ids.map((d) => document.getElementById(d)).find((m) => m?.classList.contains("field-error"))?.textContent ?? "";
			});
			expect(message, id).not.toBe("");
			expect(await page.$$eval(`#problem-summary a[href="#${id}"]`, (links) => links.length), id).toBe(1);
		}
		expect(await text("#problem-summary h2")).toContain("4 things to fix");
		expect(await text("#f-holddays-error")).toContain("0 to 365 days");
		expect(await text("#problem-summary")).not.toMatch(/integer|must be a number|ZodError/i);
		expect(await text("#f-campaignenddate-error")).toContain("after the start");
		expect(await text("#f-r0_t0_fromcount-error")).toContain("2 or more");

		// Everything typed comes back as typed.
		expect(await value("#f-offertitle")).toBe("Give $10, get $20");
		expect(await value("#f-campaignstartdate")).toBe("2030-03-10T09:00");
		expect(await value("#f-campaignenddate")).toBe("2030-03-01T09:00");
		expect(await value("#f-holddays")).toBe("-3");
		expect(await value("#f-r0_eventname")).toBe("Transaction");
		expect(await value("#f-r0_reward")).toBe("10");
		expect([await value("#f-r0_t0_fromcount"), await value("#f-r0_t0_reward")]).toEqual(["1", "20"]);
		expect([await value("#f-r0_t1_fromcount"), await value("#f-r0_t1_reward")]).toEqual(["5", "50"]);
		expect(await campaignNames()).not.toContain("Launch offer");
		await axeClean();
		await drawSteadyOrigin(page, service.base);
		await page.screenshot({ path: `${IMAGES}campaign-builder-errors.png` });

		// Fixed, it saves: the tiers as rows became the campaign's tiers.
		await page.type("#f-campaignname", "Launch offer");
		await setValue("#f-campaignenddate", "2030-04-01T09:00");
		await page.$eval("#f-holddays", (e) => {
			(e as HTMLInputElement).value = "14";
		});
		await page.$eval("#f-r0_t0_fromcount", (e) => {
			(e as HTMLInputElement).value = "3";
		});
		expect(await submit("button[name=save]")).toBe(200);
		expect(await text("[role=status]")).toContain("Campaign created");
		const id = Number(/campaigns\/(\d+)/.exec(page.url())?.[1]);
		const stored = (await client.admin("GET", `/apps/${app.appid}/campaigns/${id}`)).body;
		expect(stored).toMatchObject({ campaignname: "Launch offer", holddays: 14, campaignenddate: "2030-04-01T09:00:00.000Z" });
		expect(stored.rewardrules[0]).toMatchObject({
			eventname: "Transaction",
			reward: 10,
			tiers: [
				{ fromcount: 3, reward: 20 },
				{ fromcount: 5, reward: 50 },
			],
		});
		expect(await text("#r0_sentence")).toBe(
			"The referrer gets 10 USD when a friend pays, from the 3rd friend 20 USD, from the 5th friend 50 USD.",
		);
		await axeClean();
	});

	it("updates the preview of the share page and the widget as the operator types, and without script through the Preview button", async () => {
		expect(await go(path("/campaigns/new"))).toBe(200);
		await page.type("#f-offertitle", "Bring a friend to the bakery");
		await page.type("#f-r0_eventname", "Signup");
		await page.type("#f-r0_reward", "5");
		const srcdoc = (id: string) => page.$eval(id, (e) => e.getAttribute("srcdoc") ?? "");
		await waitFor(
			"the live preview",
			async () => ((await srcdoc("#preview-share")).includes("Bring a friend to the bakery") ? true : undefined),
			{ context, timeoutMs: 8000 },
		);
		expect(await srcdoc("#preview-widget")).toContain("Bring a friend to the bakery");
		await waitFor(
			"the rule in words",
			async () => ((await text("#preview-rules")).includes("5 USD when a friend signs up") ? true : undefined),
			{
				context,
			},
		);
		await axeClean();
		await drawSteadyOrigin(page, service.base);
		await page.screenshot({ path: `${IMAGES}campaign-builder-preview.png` });

		// Without script: app.js is never delivered, so only the Preview button's own form post can show the preview.
		const noScript = (request: HTTPRequest) =>
			void (request.url().endsWith("/dashboard/static/app.js") ? request.abort() : request.continue());
		await page.setRequestInterception(true);
		page.on("request", noScript);
		try {
			expect(await go(path("/campaigns/new"))).toBe(200);
			await page.type("#f-offertitle", "No script needed");
			await page.type("#f-r0_eventname", "Purchase");
			await page.type("#f-r0_reward", "7");
			await page.select("#f-s0_network", "x");
			// Typing changed nothing in the preview: no script runs.
			expect(await srcdoc("#preview-share")).not.toContain("No script needed");
			expect(await submit("form.builder button[formaction$='/new/preview']")).toBe(200);
			expect(new URL(page.url()).pathname).toBe(path("/campaigns/new/preview"));
			expect(await srcdoc("#preview-share")).toContain("No script needed");
			expect(await srcdoc("#preview-share")).toContain('data-kind="x"');
			expect(await text("#preview-rules")).toContain("The referrer gets 7 USD when a friend pays");
			// The form comes back as typed; nothing was saved.
			expect(await value("#f-offertitle")).toBe("No script needed");
			expect(await value("#f-s0_network")).toBe("x");
			expect(await value("#f-r0_reward")).toBe("7");
			await axeClean();
		} finally {
			page.off("request", noScript);
			await page.setRequestInterception(false);
		}
	});

	it("warns before saving a campaign with no share button, and saves it once confirmed", async () => {
		expect(await go(path("/campaigns/new"))).toBe(200);
		await page.type("#f-campaignname", "Quiet campaign");
		await page.select("#f-s0_network", "");
		await page.select("#f-s1_network", "");
		expect(await submit("button[name=save]")).toBe(400);
		expect(await text("#warnings")).toContain("No share button");
		expect(await value("#f-campaignname")).toBe("Quiet campaign");
		expect(await campaignNames()).not.toContain("Quiet campaign");
		await axeClean();
		await drawSteadyOrigin(page, service.base);
		await page.screenshot({ path: `${IMAGES}campaign-builder-no-share.png` });
		await page.click("input[name=confirm][value=noshare]");
		expect(await submit("button[name=save]")).toBe(200);
		expect(await text("[role=status]")).toContain("Campaign created");
		expect(await campaignNames()).toContain("Quiet campaign");
	});
});

describe("archive, restore and delete", () => {
	it("archives a campaign out of the pickers into Archived, restores it, and deletes only what nothing references", async () => {
		expect(await go(path(`/campaigns/${app.joined}`))).toBe(200);
		expect(await submit("form[action$='/archive'] button")).toBe(200);
		expect(await text("[role=status]")).toContain("Campaign archived");
		expect(await text("[data-testid=archived-note]")).toContain("records no new conversion");
		await axeClean();

		// Gone from the pickers (review queue, analytics), listed under Archived.
		for (const picker of ["/review", "/analytics"]) {
			expect(await go(path(picker))).toBe(200);
			const options = await page.$$eval("#f-campaignid option", (os) => os.map((o) => o.textContent ?? ""));
			expect(options, picker).toContain("Evergreen");
			expect(options, picker).not.toContain("Summer 2025");
			await axeClean();
		}
		expect(await go(path("/campaigns"))).toBe(200);
		expect(await text("[data-testid=archived-campaigns]")).toContain("Summer 2025");
		expect(await page.$$eval("table", (tables) => tables[0]?.textContent ?? "")).not.toContain("Summer 2025");
		await axeClean();
		await drawSteadyOrigin(page, service.base);
		await page.screenshot({ path: `${IMAGES}campaign-archived.png` });

		// A conversion against it is refused with its code, and nothing is recorded.
		const refused = await client.api("registerconversionevent", {
			apikey: app.apikey,
			privatekey: app.privatekey,
			userkey: app.ann,
			eventname: "Signup",
			customid: "archived-1",
			growthhack: "SaaS_Referrals",
			campaignid: app.joined,
		});
		expect(refused.body.errorcode).toBe("campaign_archived");

		// Restored: back in the list; deleting it is refused while a user is in it.
		expect(await go(path(`/campaigns/${app.joined}`))).toBe(200);
		expect(await submit("form[action$='/restore'] button")).toBe(200);
		expect(await text("[role=status]")).toContain("Campaign restored");
		expect(await submit("form[action$='/delete'] button")).toBe(200);
		expect(await text("[role=alert]")).toContain("users have joined it");
		expect(await campaignNames()).toContain("Summer 2025");
		await axeClean();

		// The unused one is deleted.
		expect(await go(path(`/campaigns/${app.unused}`))).toBe(200);
		expect(await submit("form[action$='/delete'] button")).toBe(200);
		expect(await text("[role=status]")).toContain("Campaign deleted");
		expect(await campaignNames()).not.toContain("Typo campaign");
		await axeClean();
	});
});
