import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 34 in a real browser against `wrangler dev`: an operator edits a
// campaign's reminder email with the keyboard, sees the live preview follow
// the typing (and, without script, the Preview button's page), saves it; an
// unknown variable is refused on save; the next `remindfriend` sends that
// text with the app's logo and accent colour (read from /dev/mail).

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
let page: Page;
const WAIT = { timeoutMs: 30_000, context: () => service.logs().slice(-2000) };
const client = serviceClient(() => service);

// Kept as promises: when the start outlives the hook's timeout (a loaded machine), afterAll still stops what started.
const starting = { service: null as ReturnType<typeof startService> | null, browser: null as Promise<Browser> | null };

beforeAll(async () => {
	starting.service = startService({ name: "messages" });
	starting.browser = launchBrowser();
	[service, browser] = await Promise.all([starting.service, starting.browser]);
	page = await browser.newPage();
	await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
}, 240_000);

afterAll(async () => {
	await (await starting.browser?.catch(() => null))?.close();
	await (await starting.service?.catch(() => null))?.stop();
});

const go = async (path: string) => (await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" }))?.status() ?? 0;
const text = (selector: string) => page.$eval(selector, (el) => el.textContent ?? "");

/** Replaces a field's value by keyboard only: focus, select all, type. */
async function retype(selector: string, value: string) {
	await page.focus(selector);
	await page.keyboard.down("Control");
	await page.keyboard.press("a");
	await page.keyboard.up("Control");
	await page.keyboard.press("Backspace");
	await page.keyboard.type(value);
}

/** Tabs forward until the focused element matches `label` (its text), then presses Enter and waits for the page it loads. */
async function tabToAndPress(label: string) {
	for (let i = 0; i < 10; i++) {
		await page.keyboard.press("Tab");
		const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
		if (focused === label) {
			await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.keyboard.press("Enter")]);
			return;
		}
	}
	throw new Error(`no "${label}" reached with Tab`);
}

describe("a campaign's emails in a browser", () => {
	it("edits the reminder with a live preview; an unknown variable is refused; remindfriend sends the text with the logo", async () => {
		const app = (await client.admin("POST", "/apps", { name: "Brand shop", landingurl: "https://shop.example.com/" })).body;
		const logo = "https://brand.invalid/logo.png";
		expect((await client.admin("PATCH", `/apps/${app.appid}`, { logourl: logo, accentcolor: "#0a7d32" })).status).toBe(200);
		const { campaignid } = (
			await client.admin("POST", `/apps/${app.appid}/campaigns`, {
				campaignname: "Give 10",
				offertitle: "Give 10, get 10",
				rewardrules: [{ rewardusertype: "Friend", eventname: "Signup", reward: 10, rewardunit: "USD" }],
			})
		).body;
		const creds = { apikey: app.apikey, privatekey: app.privatekey };
		const referrer = (await client.api("register", { ...creds, email: "rita@example.com", name: "Rita" })).body;
		await client.api("register", { ...creds, email: "fred@example.com", name: "Fred", referrercode: referrer.referralcode });

		expect(await go("/dashboard/login")).toBe(200);
		await page.type("#f-token", service.adminToken);
		await Promise.all([page.waitForNavigation(), page.click("form[action='/dashboard/login'] button[type=submit]")]);

		const editor = `/dashboard/apps/${app.appid}/campaigns/${campaignid}/messages`;
		expect(await go(`/dashboard/apps/${app.appid}/campaigns/${campaignid}`)).toBe(200);
		await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(`a[href='${editor}']`)]);
		await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(`a[href='${editor}?kind=reminder&lang=en']`)]);
		expect(await text("[data-testid=custom]")).toContain("the default text");
		// The default, previewed on arrival with the sample friend and the campaign's offer.
		expect(await text("[data-testid=preview-subject]")).toBe("Ann reminds you: Give 10, get 10");
		expect(await seriousAxeViolations(page)).toEqual([]);

		// Live: the preview follows the typing, no button pressed.
		await retype("#f-subject", "{{referrername}} saved you {{reward}}");
		await retype("#f-body", "Hi {{friendname}},\n\n{{referrername}} wants you in: {{sharelink}}\n\nP.S. <b>not bold</b>");
		await waitFor(
			"the live preview",
			async () => (await text("[data-testid=preview-subject]").catch(() => "")) === "Ann saved you 10 USD" || undefined,
			WAIT,
		);
		expect(await text("[data-testid=preview-text]")).toBe(
			// The link as the real reminder carries it (issue 48): this service's origin, SHARE_BASE_URL being unset.
			`Hi Bob,\n\nAnn wants you in: ${service.base}/r/ANN123\n\nP.S. <b>not bold</b>`,
		);
		const previewHtml = await page.$eval("#preview iframe", (el) => el.getAttribute("srcdoc") ?? "");
		expect(previewHtml).toContain("&lt;b&gt;not bold&lt;/b&gt;");
		expect(previewHtml).toContain(`src="${logo}"`);
		expect(await seriousAxeViolations(page)).toEqual([]);

		// Saved with the keyboard: from the text, Tab past Preview to Save.
		await page.focus("#f-body");
		await tabToAndPress("Save email");
		expect(await text(".flash.ok")).toContain("Email saved");
		expect(await text("[data-testid=custom]")).toContain("this campaign's text");

		// An unknown variable: the live preview says so, and Save is refused with nothing saved.
		await retype("#f-body", "Hello {{firstname}}");
		await waitFor("the preview's refusal", async () => (await page.$("[data-testid=preview-error]")) ?? undefined, WAIT);
		expect(await text("[data-testid=preview-error]")).toContain("{{firstname}}");
		await page.focus("#f-body");
		await tabToAndPress("Save email");
		expect(await text(".flash.error")).toContain("unknown variable {{firstname}}");
		const stored = await client.admin("GET", `/apps/${app.appid}/campaigns/${campaignid}/messages`);
		expect(stored.body.messages.reminder.templates.en.body).toContain("{{referrername}} wants you in");

		// Without script, the Preview button posts the form and the page comes back with the preview.
		await page.setJavaScriptEnabled(false);
		expect(await go(`${editor}?kind=reminder&lang=fr`)).toBe(200);
		await retype("#f-subject", "{{referrername}} pense à vous");
		await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click("button[formaction$='/messages/preview']")]);
		expect(await text("[data-testid=preview-subject]")).toBe("Ann pense à vous");
		await page.setJavaScriptEnabled(true);

		// The next reminder sends the saved text, with the app's logo and colour.
		expect((await client.api("remindfriend", { ...creds, userkey: referrer.userkey, friendemail: "fred@example.com" })).status).toBe(200);
		const mail = await waitFor(
			"the reminder in /dev/mail",
			async () => {
				const { mail } = (await (await fetch(`${service.base}/dev/mail`)).json()) as {
					mail: { to: string; subject: string; text: string; html: string }[];
				};
				return mail.find((m) => m.to === "fred@example.com");
			},
			WAIT,
		);
		expect(mail.subject).toBe("Rita saved you 10 USD");
		expect(mail.text).toBe(`Hi Fred,\n\nRita wants you in: ${referrer.shareurl}\n\nP.S. <b>not bold</b>`);
		expect(mail.html).toContain(`<img src="${logo}" alt="Brand shop"`);
		expect(mail.html).toContain("#0a7d32");
		expect(mail.html).toContain("&lt;b&gt;not bold&lt;/b&gt;");
	});

	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
