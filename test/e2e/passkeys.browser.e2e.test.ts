import type { Browser, CDPSession, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";
import { INVITATION_LINK, linkFromMailbox } from "./mailbox";
import { serviceClient } from "./service-client";

// Issue 32's passkeys in Chromium against `wrangler dev`, with Chromium's
// virtual authenticator (Chrome DevTools Protocol, WebAuthn domain: CTAP2,
// internal transport, resident keys, user verification that succeeds): a
// member registers a passkey on the account page, signs out, signs in with
// it; the owner requires passkeys and the password alone is refused; a new
// member without a passkey is held to the account page until they register
// one. axe-core checks the new pages.

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
let base: string;

beforeAll(async () => {
	[service, browser] = await Promise.all([startService({ name: "passkeys" }), launchBrowser()]);
	// A WebAuthn relying party is a domain, never an IP address (WebAuthn §5.1.3, "valid domain"): the browser goes by localhost.
	base = service.base.replace("127.0.0.1", "localhost");
});

afterAll(async () => {
	await browser?.close();
	await service?.stop();
});

const client = serviceClient(() => service);
const context = () => service.logs().slice(-2000);

async function submit(page: Page, selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}

const path = (page: Page) => new URL(page.url()).pathname;

async function virtualAuthenticator(cdp: CDPSession): Promise<string> {
	const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
		options: {
			protocol: "ctap2",
			transport: "internal",
			hasResidentKey: true,
			hasUserVerification: true,
			isUserVerified: true,
			automaticPresenceSimulation: true,
		},
	});
	return authenticatorId;
}

async function invitationFor(appid: string, email: string): Promise<string> {
	expect((await client.admin("POST", `/apps/${appid}/members`, { email, role: "owner" })).status).toBe(201);
	const link = await linkFromMailbox(service.base, email, /invited/, INVITATION_LINK, context);
	return `${base}${new URL(link).pathname}`;
}

async function accept(page: Page, link: string, password: string, { addPasskeyNext = false } = {}) {
	await page.goto(link, { waitUntil: "domcontentloaded" });
	await page.type("#f-password", password);
	await page.type("#f-password2", password);
	if (addPasskeyNext) await page.click("#f-addpasskey");
	await submit(page, "button[type=submit]");
}

/** Adds a passkey on the account page (the page must be open), named `name`. */
async function addPasskey(page: Page, name: string) {
	await page.waitForSelector("form[data-passkey=register]:not([hidden])");
	await page.$eval("#f-name", (input) => {
		(input as HTMLInputElement).value = "";
	});
	await page.type("#f-name", name);
	await submit(page, "form[data-passkey=register] button[type=submit]");
	expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain(`Passkey "${name}" added.`);
}

describe("passkeys in a browser", () => {
	it("registers a passkey, signs in with it, and an app requiring passkeys refuses the password alone", { timeout: 90_000 }, async () => {
		const created = await client.admin("POST", "/apps", { name: "Passkey shop", landingurl: "https://shop.example.com/" });
		expect(created.status).toBe(201);
		const { appid } = created.body;
		const page = await browser.newPage();
		await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
		const cdp = await page.createCDPSession();
		await cdp.send("WebAuthn.enable");
		const authenticatorId = await virtualAuthenticator(cdp);

		// Paula accepts her invitation with a password, ticking the offer of a passkey: her account page opens to add it.
		await accept(page, await invitationFor(appid, "paula@example.com"), "paula password 123", { addPasskeyNext: true });
		expect(path(page)).toBe("/dashboard/account");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("You joined Passkey shop. Add a passkey below.");
		await addPasskey(page, "Test laptop");
		expect(await page.$$eval("tr[data-passkey]", (rows) => rows.length)).toBe(1);
		expect(await seriousAxeViolations(page)).toEqual([]);
		const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
		expect(credentials).toHaveLength(1);
		expect(credentials[0]?.isResidentCredential).toBe(true);

		// Signed out, she signs in with the passkey alone: no email, no password.
		await submit(page, "form[action='/dashboard/logout'] button");
		expect(path(page)).toBe("/dashboard/login");
		await page.waitForSelector("form[data-passkey=signin]:not([hidden])");
		expect(await seriousAxeViolations(page)).toEqual([]);
		await submit(page, "form[data-passkey=signin] button[type=submit]");
		expect(path(page)).toBe("/dashboard");
		expect(await page.content()).toContain("Passkey shop");
		const after = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
		expect(after.credentials[0]?.signCount).toBeGreaterThan(0);

		// The owner requires passkeys: the right password alone is refused, and no session starts.
		expect((await client.admin("PATCH", `/apps/${appid}`, { requirepasskeys: true })).status).toBe(200);
		await submit(page, "form[action='/dashboard/logout'] button");
		await page.type("#f-email", "paula@example.com");
		await page.type("#f-password", "paula password 123");
		await submit(page, "form[action='/dashboard/login/member'] button");
		expect(await page.$eval("[role=alert]:not([hidden])", (e) => e.textContent)).toContain("requires a passkey");
		await page.goto(`${base}/dashboard/apps/${appid}`, { waitUntil: "domcontentloaded" });
		expect(path(page)).toBe("/dashboard/login");
		// The passkey still signs her in.
		await page.waitForSelector("form[data-passkey=signin]:not([hidden])");
		await submit(page, "form[data-passkey=signin] button[type=submit]");
		expect(path(page)).toBe("/dashboard");

		// A new member without a passkey: the invitation's password leads to the account page only, until one is added.
		await submit(page, "form[action='/dashboard/logout'] button");
		await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });
		await virtualAuthenticator(cdp);
		await accept(page, await invitationFor(appid, "quinn@example.com"), "quinn password 456");
		expect(path(page)).toBe("/dashboard/account");
		expect(await page.$eval("[data-testid=passkey-needed]", (e) => e.textContent)).toContain("requires a passkey");
		expect(await seriousAxeViolations(page)).toEqual([]);
		await page.goto(`${base}/dashboard/apps/${appid}`, { waitUntil: "domcontentloaded" });
		expect(path(page)).toBe("/dashboard/account");
		await addPasskey(page, "Phone");
		await page.goto(`${base}/dashboard/apps/${appid}`, { waitUntil: "domcontentloaded" });
		expect(path(page)).toBe(`/dashboard/apps/${appid}`);
	});

	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
