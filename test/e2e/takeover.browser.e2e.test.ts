import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";
import { INVITATION_LINK, linkFromMailbox, RESET_LINK } from "./mailbox";
import { serviceClient } from "./service-client";

// Issue 32 in a real browser against `wrangler dev`: the cross-tenant
// takeover fails at every step. A's owner invites B's future owner to A and
// gets no link; B adds the same email and A's owner has no session in B; the
// person accepts B's invitation from the local mailbox with a password of
// their own; a password reset by email ends every session of theirs.

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
const context = () => service.logs().slice(-2000);

beforeAll(async () => {
	[service, browser] = await Promise.all([startService({ name: "takeover" }), launchBrowser()]);
});

afterAll(async () => {
	await browser?.close();
	await service?.stop();
});

const client = serviceClient(() => service);
const go = async (page: Page, path: string) =>
	(await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" }))?.status() ?? 0;
async function submit(page: Page, selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}
const sessionCookie = async (page: Page) => (await page.cookies()).find((c) => c.name === "dash_session")?.value ?? "";

async function newApp(name: string) {
	const created = await client.admin("POST", "/apps", { name, landingurl: "https://shop.example.com/" });
	expect(created.status).toBe(201);
	return created.body.appid as string;
}

describe("people who can't be impersonated", () => {
	it("the takeover sequence fails at every step; the person accepts from the mailbox; a reset ends every session", async () => {
		const [appA, appB] = [await newApp("Mallory's shop"), await newApp("Bank of B")];
		const page = await browser.newPage();
		await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP

		// Mallory is A's owner, from her own invitation.
		expect((await client.admin("POST", `/apps/${appA}/members`, { email: "mallory@example.com", role: "owner" })).status).toBe(201);
		await page.goto(await linkFromMailbox(service.base, "mallory@example.com", /Mallory/, INVITATION_LINK, context));
		await page.type("#f-password", "mallory password 1");
		await page.type("#f-password2", "mallory password 1");
		await submit(page, "button[type=submit]");
		expect(new URL(page.url()).pathname).toBe(`/dashboard/apps/${appA}`);

		// Step 1: she invites the victim's email to A. No link reaches her: not the page, not the API.
		await go(page, `/dashboard/apps/${appA}/team`);
		await page.type("#f-email", "victor@example.com");
		await page.select("#f-invite-role", "viewer");
		await submit(page, "form[action$='/team/members'] button[type=submit]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("Invitation emailed to victor@example.com");
		const team = await page.content();
		expect(team).not.toContain("inv_");
		expect(team).toContain("invited");
		expect(await seriousAxeViolations(page)).toEqual([]);
		const members = await client.admin("GET", `/apps/${appA}/members`);
		expect(JSON.stringify(members.body)).not.toContain("inv_");
		const deliveries = await client.admin("GET", `/apps/${appA}/deliveries`);
		for (const d of deliveries.body.deliveries) {
			expect(JSON.stringify((await client.admin("GET", `/apps/${appA}/deliveries/${d.eventid}`)).body)).not.toContain("inv_");
		}

		// Step 2: B adds the same email as an owner. Mallory gets nothing of B.
		const added = await client.admin("POST", `/apps/${appB}/members`, { email: "victor@example.com", role: "owner" });
		expect(added.body.state).toBe("invited");
		expect(await go(page, `/dashboard/apps/${appB}`)).toBe(404);
		expect(await go(page, `/dashboard/apps/${appB}/keys`)).toBe(404);
		await go(page, "/dashboard");
		expect(await page.content()).not.toContain("Bank of B");
		await submit(page, "form[action='/dashboard/logout'] button");

		// Step 3: Victor reads his mail (the local mailbox page) and accepts B's invitation with his own password.
		expect(await go(page, "/dashboard/mail")).toBe(200);
		const link = await page.$eval("article[aria-label*='Bank of B'] a[href*='/invitations/']", (a) => a.getAttribute("href") ?? "");
		expect(link).toBe(await linkFromMailbox(service.base, "victor@example.com", /Bank of B/, INVITATION_LINK, context));
		expect(await seriousAxeViolations(page)).toEqual([]);
		await go(page, new URL(link).pathname);
		await page.type("#f-password", "victor password 22");
		await page.type("#f-password2", "victor password 22");
		await submit(page, "button[type=submit]");
		expect(new URL(page.url()).pathname).toBe(`/dashboard/apps/${appB}`);
		expect(await page.content()).toContain("Bank of B");
		const before = await sessionCookie(page);

		// A password reset by email: one use, and every earlier session ends.
		await go(page, "/dashboard/reset");
		await page.type("#f-email", "victor@example.com");
		await submit(page, "button[type=submit]");
		expect(await page.$eval("[role=status]", (e) => e.textContent)).toContain("If that email belongs to a member");
		expect(await seriousAxeViolations(page)).toEqual([]);
		await go(page, new URL(await linkFromMailbox(service.base, "victor@example.com", /Reset/, RESET_LINK, context)).pathname);
		await page.type("#f-password", "victor new password 3");
		await page.type("#f-password2", "victor new password 3");
		await submit(page, "button[type=submit]");
		expect(new URL(page.url()).pathname).toBe("/dashboard");
		const old = await fetch(`${service.base}/dashboard`, { headers: { cookie: `dash_session=${before}` }, redirect: "manual" });
		expect(old.status).toBe(303);
		expect(old.headers.get("location")).toBe("/dashboard/login");
		expect(await page.content()).toContain("Bank of B");
	});

	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
