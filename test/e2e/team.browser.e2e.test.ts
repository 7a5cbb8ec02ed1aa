import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";
import { INVITATION_LINK, linkFromMailbox } from "./mailbox";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 22 in a real browser against `wrangler dev`: an owner invites a
// reviewer from the Team page; the reviewer accepts, signs in with email and
// password, approves a Suspicious reward from the review queue, is refused
// the app's keys page (403), and the audit log shows the approval with the
// reviewer's email and the status before and after.

let service: Awaited<ReturnType<typeof startService>>;
const WAIT = { timeoutMs: 30_000, context: () => service.logs().slice(-2000) };
let browser: Browser;

beforeAll(async () => {
	[service, browser] = await Promise.all([startService({ name: "team" }), launchBrowser()]);
});

afterAll(async () => {
	await browser?.close();
	await service?.stop();
});

const client = serviceClient(() => service);
const adminCall = client.admin;
const api = async (operation: string, body: Record<string, unknown>) => (await client.api(operation, body)).body;

async function signOut(page: Page) {
	await submit(page, "form[action='/dashboard/logout'] button");
	expect(new URL(page.url()).pathname).toBe("/dashboard/login");
}

async function signIn(page: Page, email: string, password: string) {
	await page.type("#f-email", email);
	await page.type("#f-password", password);
	await submit(page, "form[action='/dashboard/login/member'] button");
}

const go = async (page: Page, path: string) =>
	(await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" }))?.status() ?? 0;

async function submit(page: Page, selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}

async function acceptInvitation(page: Page, url: string, password: string) {
	expect(new URL(url).origin).toBe(service.base);
	expect((await page.goto(url, { waitUntil: "domcontentloaded" }))?.status()).toBe(200);
	expect(await seriousAxeViolations(page)).toEqual([]);
	await page.type("#f-password", password);
	await page.type("#f-password2", password);
	await submit(page, "button[type=submit]");
}

describe("team members in a browser", () => {
	it("owner invites a reviewer; the reviewer approves a Suspicious reward, is refused the keys, and the audit log names them", async () => {
		const created = await adminCall("POST", "/apps", { name: "Team shop", landingurl: "https://shop.example.com/" });
		expect(created.status).toBe(201);
		const { appid, apikey, privatekey } = created.body;
		const campaign = await adminCall("POST", `/apps/${appid}/campaigns`, {
			campaignname: "Give $10",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		});
		expect(campaign.status).toBe(201);

		// The superuser makes the first owner (set-up); the owner takes it from there in the browser.
		const owner = await adminCall("POST", `/apps/${appid}/members`, { email: "olga.owner@example.com", role: "owner" });
		expect(owner.status).toBe(201);
		// The invitation is emailed, never answered (issue 32): locally it is in /dev/mail.
		expect(JSON.stringify(owner.body)).not.toContain("inv_");
		const ownerInvitation = await linkFromMailbox(service.base, "olga.owner@example.com", /invited/, INVITATION_LINK, WAIT.context);
		// One browser, the two people in turn (this headless Chromium runs a single context).
		const page = await browser.newPage();
		await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
		const ownerPage = page;
		await acceptInvitation(ownerPage, ownerInvitation, "owner password 123");
		expect(new URL(ownerPage.url()).pathname).toBe(`/dashboard/apps/${appid}`);
		await go(ownerPage, `/dashboard/apps/${appid}/team`);
		expect(await seriousAxeViolations(ownerPage)).toEqual([]);
		await ownerPage.type("#f-email", "rita.reviewer@example.com");
		await ownerPage.select("#f-invite-role", "reviewer");
		await submit(ownerPage, "form[action$='/team/members'] button[type=submit]");
		expect(await ownerPage.$eval("[role=status]", (e) => e.textContent)).toContain("Invitation emailed to rita.reviewer@example.com");
		expect(await ownerPage.content()).not.toContain("inv_");
		const invitationUrl = await linkFromMailbox(service.base, "rita.reviewer@example.com", /invited/, INVITATION_LINK, WAIT.context);

		// The reviewer: accepts, signs out, signs in with email and password.
		await signOut(ownerPage);
		const reviewer = page;
		await acceptInvitation(reviewer, invitationUrl, "reviewer password 456");
		expect(new URL(reviewer.url()).pathname).toBe(`/dashboard/apps/${appid}`);
		await signOut(reviewer);
		expect(await seriousAxeViolations(reviewer)).toEqual([]);
		await signIn(reviewer, "rita.reviewer@example.com", "reviewer password 456");
		const home = await reviewer.content();
		expect(home).toContain("Team shop");
		expect(home).toContain("reviewer");

		// A referral from a shared phone: Suspicious, held for review.
		const creds = { apikey, privatekey };
		const referrer = await api("register", { ...creds, email: "ann@example.com", phone: "+15550101" });
		const friend = await api("register", {
			...creds,
			email: "ann.twin@example.com",
			phone: "+15550101",
			referrercode: referrer.referralcode,
		});
		await api("registerconversionevent", {
			...creds,
			userkey: friend.userkey,
			eventname: "Signup",
			customid: "1",
			growthhack: "SaaS_Referrals",
		});
		const rewardId = `${referrer.userkey}-1`;
		expect((await api("checkrewardstatus", { ...creds, rewarddtlid: rewardId })).rewardstatus).toBe("Suspicious");
		const review = `/dashboard/apps/${appid}/review`;
		await waitFor(
			"the reward in the review queue",
			async () => {
				await go(reviewer, review);
				return (await reviewer.$(`input[name=ids][value="${rewardId}"]`)) ?? undefined;
			},
			WAIT,
		);
		await reviewer.click(`input[value="${rewardId}"]`);
		await submit(reviewer, "button[value=Approved]");
		expect(await reviewer.$eval("[role=status]", (e) => e.textContent)).toContain("Approved 1 reward(s)");
		expect((await api("checkrewardstatus", { ...creds, rewarddtlid: rewardId })).rewardstatus).toBe("Approved");

		// Not theirs: the app's keys page and the team.
		expect(await go(reviewer, `/dashboard/apps/${appid}/keys`)).toBe(403);
		expect(await go(reviewer, `/dashboard/apps/${appid}/team`)).toBe(403);

		// The audit log, as the owner sees it: the approval, by the reviewer's email, Suspicious -> Approved.
		await go(reviewer, "/dashboard");
		await signOut(reviewer);
		await signIn(ownerPage, "olga.owner@example.com", "owner password 123");
		const row = await waitFor(
			"the approval in the audit log",
			async () => {
				await go(ownerPage, `/dashboard/apps/${appid}/audit?action=reward.status`);
				const rows = await ownerPage.$$eval("tbody tr", (trs) => trs.map((tr) => tr.textContent ?? ""));
				return rows.find((text) => text.includes(rewardId));
			},
			WAIT,
		);
		expect(row).toContain("rita.reviewer@example.com");
		expect(row).toContain("rewardstatus: Suspicious → Approved");
		expect(await seriousAxeViolations(ownerPage)).toEqual([]);
		// The reward's own page says who changed it.
		await go(ownerPage, `/dashboard/apps/${appid}/rewards/${rewardId}`);
		expect(await ownerPage.content()).toContain("rita.reviewer@example.com");
	});

	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
