import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { definitionList, launchBrowser, seriousAxeViolations } from "./browser";
import { type Harness, invoicePaid, startHarness } from "./stripe-harness";

// Issue 48, "each row links to the reward's page, which shows the order id, the event, its payment (for Stripe)":
// a reward earned from a Stripe payment (an invoice.paid sent to `wrangler dev` by the local fake Stripe's signer),
// opened in Chromium from the review queue's link as an operator would, shows the payment: what was paid, what
// was refunded, the invoice and the payment intent. The page of a reward from an API call (no payment) is
// covered by operator.browser.e2e.test.ts.

let h: Harness;
let browser: Browser;
let page: Page;

const starting = { harness: null as Promise<Harness> | null, browser: null as Promise<Browser> | null };

beforeAll(async () => {
	starting.harness = startHarness("reward-payment", { holddays: 7 });
	starting.browser = launchBrowser();
	[h, browser] = await Promise.all([starting.harness, starting.browser]);
	page = await browser.newPage();
	await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
}, 300_000);

afterAll(async () => {
	await (await starting.browser?.catch(() => null))?.close();
	await (await starting.harness?.catch(() => null))?.stop();
});

/** The `dt` -> `dd` text pairs of a definition list. */
const props = (selector: string) => definitionList(page, selector);

describe("a Stripe-paid reward's page (issue 48)", () => {
	it("shows the payment: amount paid, refunded, invoice and payment intent", async () => {
		const { friendCustomer, rewardid } = await h.referral("rita");
		const paid = invoicePaid(friendCustomer, 4990);
		expect(await h.deliver(paid)).toBe(200);
		const reward = await h.until("the Stripe payment's reward", async () => {
			const one = await h.admin("GET", `/apps/${h.appid}/rewards/${rewardid}`);
			return one.status === 200 && one.body.payment ? one.body : undefined;
		});
		expect(reward.payment).toMatchObject({ invoice: paid.data.object.id, amount: 49.9, refunded: 0, currency: "usd" });

		const base = h.service.base;
		await page.goto(`${base}/dashboard/login`, { waitUntil: "domcontentloaded" });
		await page.type("#f-token", h.service.adminToken);
		await Promise.all([page.waitForNavigation(), page.click("form[action='/dashboard/login'] button[type=submit]")]);
		// Held 7 days: Under Review, found in the queue's "Under review" filter, whose row links to the reward's page.
		await page.goto(`${base}/dashboard/apps/${h.appid}/review?status=UnderReview`, { waitUntil: "domcontentloaded" });
		await Promise.all([
			page.waitForNavigation({ waitUntil: "domcontentloaded" }),
			page.click(`tr[data-reward="${rewardid}"] a[href$="/rewards/${rewardid}"]`),
		]);
		const payment = await props("[data-testid=reward-payment]");
		expect(payment).toEqual({
			Paid: "49.90 USD",
			Refunded: "0.00 USD",
			"Stripe invoice": paid.data.object.id,
			"Stripe payment": paid.intent,
		});
		expect(await page.$eval("main", (m) => m.textContent ?? "")).not.toContain("Not a Stripe payment");
		expect(await seriousAxeViolations(page)).toEqual([]);
	});
});
