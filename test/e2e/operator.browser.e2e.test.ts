import { mkdirSync } from "node:fs";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, definitionList, docsScreenshots, drawSteadyOrigin, launchBrowser, seriousAxeViolations } from "./browser";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 48, the console a growth marketer runs alone, in a real browser against `wrangler dev`: each `it` is one
// item of the issue, axe-clean on every page it opens. The pages it passes through are saved as the screenshots
// of docs/operators.md's walkthrough (docs/screenshots/console-*.png), so the walkthrough shows today's console.

// Their appids, keys and dates are new on every run, so a run writes them over the walkthrough's only when asked
// (DOCS_SCREENSHOTS=1, docs/operators.md); otherwise into the ignored screenshots/, and the tree stays clean.
const SHOTS = docsScreenshots();

let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
let page: Page;
const context = () => service.logs().slice(-2000);
const WAIT = { timeoutMs: 30_000, context };
const client = serviceClient(() => service);

const app = { appid: "", apikey: "", privatekey: "", campaign: 0, other: 0 };
const people = { ann: "", annCode: "", bob: "", carl: "" };

const go = async (path: string) => (await page.goto(`${service.base}${path}`, { waitUntil: "domcontentloaded" }))?.status() ?? 0;
async function submit(selector: string) {
	await Promise.all([page.waitForNavigation({ waitUntil: "domcontentloaded" }), page.click(selector)]);
}
const text = (selector: string) => page.$eval(selector, (e) => e.textContent?.replace(/\s+/g, " ").trim() ?? "");
const fieldValue = (selector: string) => page.$eval(selector, (e) => (e as HTMLInputElement).value);
const path = (rest = "") => `/dashboard/apps/${app.appid}${rest}`;
const api = async (operation: string, body: Record<string, unknown>) =>
	(await client.api(operation, { apikey: app.apikey, privatekey: app.privatekey, ...body })).body;

/** The page as it is now, axe-clean, saved for the walkthrough. */
async function checked(shot?: string) {
	expect(await seriousAxeViolations(page)).toEqual([]);
	if (shot) await drawSteadyOrigin(page, service.base).then(() => page.screenshot({ path: `${SHOTS}console-${shot}.png` }));
}

/** The `dt` -> `dd` text pairs of a definition list. */
const props = (selector: string) => definitionList(page, selector);

/** The rewarddtlids of the review queue's rows on the page now. */
const queueRows = () => page.$$eval("tr[data-reward]", (trs) => trs.map((tr) => tr.getAttribute("data-reward") ?? ""));

async function rewardOf(userkey: string, friend: string) {
	return waitFor(
		`the reward of ${userkey} for ${friend}`,
		async () => {
			const { rewards } = (await client.admin("GET", `/apps/${app.appid}/rewards?userkey=${userkey}`)).body;
			return (rewards as Record<string, any>[] | undefined)?.find((r) => r.frienduserkey === friend);
		},
		WAIT,
	);
}

// Kept as promises: when the start outlives the hook's timeout (a loaded machine), afterAll still stops what started.
const starting = { service: null as ReturnType<typeof startService> | null, browser: null as Promise<Browser> | null };

beforeAll(async () => {
	starting.service = startService({ name: "operator" });
	starting.browser = launchBrowser();
	[service, browser] = await Promise.all([starting.service, starting.browser]);
	page = await browser.newPage();
	await page.setBypassCSP(true); // lets the test inject axe-core; the pages themselves run under their CSP
	mkdirSync(SHOTS, { recursive: true });
}, 240_000);

afterAll(async () => {
	await (await starting.browser?.catch(() => null))?.close();
	await (await starting.service?.catch(() => null))?.stop();
});

// The app and its activity: Ann refers Bob (her phone: Suspicious) and Carl (held 7 days: Under review); both buy.
beforeAll(async () => {
	const created = await client.admin("POST", "/apps", { name: "Operator shop", landingurl: "https://shop.example.com/" });
	expect(created.status).toBe(201);
	Object.assign(app, { appid: created.body.appid, apikey: created.body.apikey, privatekey: created.body.privatekey });
	const rules = [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" }];
	const held = await client.admin("POST", `/apps/${app.appid}/campaigns`, { campaignname: "Give $10", rewardrules: rules, holddays: 7 });
	const other = await client.admin("POST", `/apps/${app.appid}/campaigns`, { campaignname: "Spring", rewardrules: rules });
	expect([held.status, other.status]).toEqual([201, 201]);
	app.campaign = held.body.campaignid;
	app.other = other.body.campaignid;
	const ann = await api("register", { email: "ann@example.com", name: "Ann Archer", phone: "+15550123" });
	const bob = await api("register", { email: "bob@example.com", phone: "+15550123", referrercode: ann.referralcode });
	const carl = await api("register", { email: "carl@example.com", referrercode: ann.referralcode });
	Object.assign(people, { ann: ann.userkey, annCode: ann.referralcode, bob: bob.userkey, carl: carl.userkey });
	for (const [i, userkey] of [bob.userkey, carl.userkey].entries()) {
		const converted = await api("registerconversionevent", {
			userkey,
			eventname: "Purchase",
			customid: `order-${i + 1}`,
			transactionvalue: "49.90",
			growthhack: "SaaS_Referrals",
		});
		expect(converted.errorcode).toBeUndefined();
	}
	// Signed in with the admin token, as `npm start` prints it.
	await go("/dashboard/login");
	await page.type("#f-token", service.adminToken);
	await submit("form[action='/dashboard/login'] button[type=submit]");
	expect(new URL(page.url()).pathname).toBe("/dashboard");
}, 120_000);

describe("the console a growth marketer runs alone (issue 48)", () => {
	it("the review queue shows the Suspicious rewards first, filters by status, and each row opens the reward with its order id and event", async () => {
		const suspicious = await rewardOf(people.ann, people.bob);
		const held = await rewardOf(people.ann, people.carl);
		expect([suspicious.rewardstatus, held.rewardstatus]).toEqual(["Suspicious", "UnderReview"]);

		// By default: the Suspicious ones, which need a person; the held one approves itself and is not mixed in.
		expect(await go(path("/review"))).toBe(200);
		expect(await fieldValue("#f-status")).toBe("Suspicious");
		expect(await queueRows()).toEqual([suspicious.rewarddtlid]);
		await checked("review-queue");

		await page.select("#f-status", "UnderReview");
		await submit("form[aria-label='Filter the queue'] button[type=submit]");
		expect(await queueRows()).toEqual([held.rewarddtlid]);
		await page.select("#f-status", "all");
		await page.select("#f-campaignid", String(app.other));
		await submit("form[aria-label='Filter the queue'] button[type=submit]");
		expect(await queueRows()).toEqual([]);
		await page.select("#f-campaignid", String(app.campaign));
		await submit("form[aria-label='Filter the queue'] button[type=submit]");
		expect((await queueRows()).sort()).toEqual([suspicious.rewarddtlid, held.rewarddtlid].sort());
		await checked();

		// The row's link opens the reward: its order id, its event and its history.
		await submit(`tr[data-reward="${suspicious.rewarddtlid}"] a[href$="/rewards/${suspicious.rewarddtlid}"]`);
		const facts = await props("[data-testid=reward]");
		expect(facts["Order id"]).toBe("order-1");
		expect(facts.Amount).toContain("10.00 USD");
		const event = await props("[data-testid=reward-event]");
		expect(event).toMatchObject({ "Order id": "order-1", Event: "Purchase", Value: "49.9" });
		expect(await text("main")).toContain("Not a Stripe payment");
		expect(await page.$$eval("main h2", (hs) => hs.map((h) => h.textContent))).toContain("Who changed it");
		await checked("reward");

		// The admin API: the same filters, and the same reward with its order id.
		const list = await client.admin("GET", `/apps/${app.appid}/rewards?status=UnderReview&campaignid=${app.campaign}`);
		expect(list.body.rewards.map((r: { rewarddtlid: string }) => r.rewarddtlid)).toEqual([held.rewarddtlid]);
		const one = await client.admin("GET", `/apps/${app.appid}/rewards/${suspicious.rewarddtlid}`);
		expect(one.status).toBe(200);
		expect(one.body.reward).toMatchObject({ rewarddtlid: suspicious.rewarddtlid, customid: "order-1" });
		expect(one.body.event).toMatchObject({ customid: "order-1", eventname: "Purchase", userkey: people.bob });
		expect(one.body.payment).toBeNull();
	});

	it("a user's 'Referred by' names the referrer and links to them; the user's page opens their share page", async () => {
		const cell = await waitFor(
			"Bob in the users list",
			async () => {
				await go(path(`/users?q=bob%40example.com`));
				const row = await page.$$eval("main tbody tr", (trs) =>
					trs.map((tr) => ({
						cells: [...tr.cells].map((td) => td.textContent?.trim() ?? ""),
						links: [...tr.querySelectorAll("a")].map((a) => a.getAttribute("href")),
					})),
				);
				return row.find((r) => r.cells[0] === "bob@example.com");
			},
			WAIT,
		);
		expect(cell.cells[5]).toBe("Ann Archer");
		expect(cell.links).toContain(path(`/users/${people.ann}`));
		await checked("users");

		expect(await go(path(`/users/${people.ann}`))).toBe(200);
		const href = await page.$eval("[data-testid=share-page-link]", (a) => a.getAttribute("href") ?? "");
		expect(href).toContain(`/share/${app.appid}/${people.ann}?exp=`);
		await checked("user");
		expect(await go(href.replace(/^https?:\/\/[^/]+/, ""))).toBe(200);
		expect(await text("body")).toContain(people.annCode);
	});

	it("test mode never lies: one switch per page, each page shows its test side or says it has none, test keys shown once and rotated with a warning", async () => {
		// An app made in the console: its test keys are shown once, with the private key.
		expect(await go("/dashboard")).toBe(200);
		await page.type("#f-name", "Console-made shop");
		await page.type("#f-landingurl", "https://made.example.com/");
		await submit("form[action='/dashboard/apps'] button[type=submit]");
		const made = { appid: new URL(page.url()).pathname.split("/")[3] ?? "", apikey: "", testapikey: "", testprivatekey: "" };
		const shown = await props("section[aria-labelledby=secrets] dl");
		made.apikey = shown.apikey ?? "";
		made.testapikey = await text("[data-testid=testapikey]");
		made.testprivatekey = await text("[data-testid=testprivatekey]");
		expect(made.testapikey).toMatch(/\S{10}/);
		expect(made.testprivatekey).toMatch(/\S{10}/);
		await checked("app-created");
		const rules = [{ rewardusertype: "Referrer", eventname: "Signup", reward: 5, rewardunit: "USD" }];
		expect((await client.admin("POST", `/apps/${made.appid}/campaigns`, { campaignname: "Welcome", rewardrules: rules })).status).toBe(201);
		const testUser = await client.api("register", { apikey: made.testapikey, privatekey: made.testprivatekey, email: "tess@example.com" });
		expect(testUser.status).toBe(200);

		// One switch on the app's page (it was drawn twice), and the page says it has no test side.
		const home = `/dashboard/apps/${made.appid}`;
		expect(await go(home)).toBe(200);
		expect(await page.$$eval("form.mode-switch", (fs) => fs.length)).toBe(1);
		expect(await text("[data-testid=app-testapikey]")).toBe(made.testapikey);
		await go(`${home}/users`);
		await submit("form.mode-switch button");
		expect(new URL(page.url()).pathname).toBe(`${home}/users`); // back where the switch was pressed
		expect(await text("form.mode-switch button")).toBe("Test data: on");
		const statements: Record<string, string> = {};
		for (const section of ["", "/users", "/review", "/deliveries", "/analytics", "/leaderboard", "/campaigns", "/audit", "/team"]) {
			expect(await go(`${home}${section}`), section).toBe(200);
			expect(await page.$$eval("form.mode-switch", (fs) => fs.length), section).toBe(1);
			statements[section || "/"] = await text("[data-testid=test-mode-statement]");
			await checked(section === "/users" ? "test-mode" : undefined);
		}
		for (const section of ["/users", "/review", "/deliveries", "/analytics", "/leaderboard"])
			expect(statements[section], section).toMatch(/shows what the app's test keys made/);
		for (const section of ["/", "/campaigns", "/audit", "/team"]) expect(statements[section], section).toMatch(/has no test side/);
		await go(`${home}/users`);
		expect(await text("main table")).toContain("tess@example.com");

		// Rotating the test keys says what it breaks, shows the new pair once, and the old pair stops working.
		await go(home);
		expect(await text("#h-rotate-testkeys")).toMatch(/stops working/);
		page.once("dialog", (dialog) => dialog.accept());
		await submit("form[action$='/rotate-testkeys'] button[type=submit]");
		const rotated = { apikey: await text("[data-testid=testapikey]"), privatekey: await text("[data-testid=testprivatekey]") };
		expect(rotated.apikey).not.toBe(made.testapikey);
		await checked();
		const old = await client.api("register", { apikey: made.testapikey, privatekey: made.testprivatekey, email: "old@example.com" });
		expect(old.status).toBe(401);
		const fresh = await client.api("register", { ...rotated, email: "new@example.com" });
		expect(fresh.status).toBe(200);
		await go(home);
		await submit("form.mode-switch button");
		expect(await page.$("[data-testid=test-mode-statement]")).toBeNull();
	});

	it("no form loses input: create app, invite and settings come back as typed, each mistake in words next to its field", async () => {
		const marked = (selector: string) =>
			page.$eval(selector, (input) => {
				const describedBy = input.getAttribute("aria-describedby") ?? "";
				return { invalid: input.getAttribute("aria-invalid"), says: document.getElementById(describedBy)?.textContent?.trim() ?? "" };
			});
		// Create app: a landing URL the browser takes and the service refuses.
		expect(await go("/dashboard")).toBe(200);
		await page.type("#f-name", "Typed shop");
		await page.type("#f-landingurl", "ftp://typed.example.com/");
		await page.type("#f-emailsender", "hello@typed.example.com");
		await submit("form[action='/dashboard/apps'] button[type=submit]");
		expect(new URL(page.url()).pathname).toBe("/dashboard/apps");
		expect(await fieldValue("#f-name")).toBe("Typed shop");
		expect(await fieldValue("#f-landingurl")).toBe("ftp://typed.example.com/");
		expect(await fieldValue("#f-emailsender")).toBe("hello@typed.example.com");
		expect(await marked("#f-landingurl")).toEqual({ invalid: "true", says: "Landing URL must be an http(s) URL." });
		expect(await page.$eval("#f-name", (e) => e.getAttribute("aria-invalid"))).toBeNull();
		const summary = await text("[role=alert]");
		expect(summary).toMatch(/^The app was not created/);
		expect(summary).not.toMatch(/Invalid request|landingurl/);
		await checked("form-kept");
		const { apps } = (await client.admin("GET", "/apps")).body;
		expect(apps.map((a: { name: string }) => a.name)).not.toContain("Typed shop");

		// Invite: an address the browser takes (no dot in the domain) and the service refuses.
		expect(await go(path("/team"))).toBe(200);
		await page.type("#f-email", "teammate@localhost");
		await page.select("#f-invite-role", "manager");
		await submit("form[aria-labelledby=invite] button[type=submit]");
		expect(await fieldValue("#f-email")).toBe("teammate@localhost");
		expect(await fieldValue("#f-invite-role")).toBe("manager");
		const invite = await marked("#f-email");
		expect(invite.invalid).toBe("true");
		expect(invite.says).toMatch(/^Email must be an email address/);
		expect(await text("[role=alert]")).toMatch(/^No invitation was sent/);
		await checked();

		// Settings: a time zone typo, marked at the field.
		expect(await go(path())).toBe(200);
		await page.$eval("#f-timezone", (e) => {
			(e as HTMLInputElement).value = "";
		});
		await page.type("#f-timezone", "Europe/Pariss");
		await submit("form[aria-labelledby=settings] button[type=submit]");
		expect(await fieldValue("#f-timezone")).toBe("Europe/Pariss");
		expect((await marked("#f-timezone")).says).toMatch(/^Time zone must be an IANA time zone name/);
		expect(await text("[role=alert]")).toMatch(/^The settings were not saved/);
		await checked();
	});

	it("analytics at a glance: the chart covers the range with quiet days flat, rates without a base read '—', money has two decimals, Sign out sits at the right end", async () => {
		await waitFor(
			"today's sign-ups on the analytics page",
			async () => {
				await go(path("/analytics"));
				return (await page.$("[data-testid=total-signups]")) && (await text("[data-testid=total-signups]")) === "3" ? true : undefined;
			},
			WAIT,
		);
		const from = await fieldValue("#f-from");
		const to = await fieldValue("#f-to");
		const rangeDays = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1;
		expect(rangeDays).toBeGreaterThan(7);

		// One point per day of the range, from its first day to its last; every day before today (all quiet) on the zero line.
		const chart = await page.$eval("main svg.chart", (svg) => {
			const line = svg.querySelector("polyline")?.getAttribute("points") ?? "";
			const ys = line.split(" ").map((p) => Number(p.split(",")[1]));
			const labels = [...svg.querySelectorAll("text")].map((t) => t.textContent?.trim() ?? "");
			return { points: ys.length, quiet: ys.slice(0, -1), labels };
		});
		expect(chart.points).toBe(rangeDays);
		expect(new Set(chart.quiet).size).toBe(1);
		expect(chart.labels).toContain(from);
		expect(chart.labels).toContain(to);

		// Ann's friends typed her code: 2 referred sign-ups, 0 clicks. No rate has a base to stand on.
		const all = await page.$$eval("main tr[data-funnel=all] td", (tds) => tds.map((td) => td.textContent?.trim() ?? ""));
		expect(all.slice(1)).toEqual(["0", "2", "—", "2", "100%", "—"]);

		// Every amount with its currency's two decimals.
		const amounts = (await text("main")).match(/\d+(?:\.\d+)? USD/g) ?? [];
		expect(amounts.length).toBeGreaterThan(0);
		expect(amounts.filter((a) => !/^\d+\.\d{2} USD$/.test(a))).toEqual([]);
		const earned = await page.$$eval("main td[data-unit=USD]", (tds) => tds.map((td) => td.textContent?.trim() ?? ""));
		expect(earned.every((v) => /^\d+\.\d{2}$/.test(v))).toBe(true);

		// The header: the brand at the left; Account, the Test data switch and Sign out together at the right end.
		const header = await page.$eval("header.top", (h) => {
			const box = (e: Element | null) => e?.getBoundingClientRect() ?? { left: 0, right: 0 };
			const signOut = box(h.querySelector("form[action='/dashboard/logout'] button"));
			return {
				right: box(h).right,
				signOut: signOut.right,
				brand: box(h.querySelector("a")).left,
				account: box(h.querySelector("a[href='/dashboard/account']")).left,
			};
		});
		expect(header.right - header.signOut).toBeLessThan(40);
		expect(header.account).toBeGreaterThan(header.right / 2);
		expect(header.brand).toBeLessThan(40);
		await checked("analytics");
	});

	it("emails as sent: the editor says this app sends no reward email and why; the preview carries the share line the real email carries", async () => {
		const editor = path(`/campaigns/${app.other}/messages?kind=reward&lang=en`);
		expect(await go(editor)).toBe(200);
		expect(await text("[data-testid=sending-state]")).toMatch(
			/sends no reward email now: sending is "When the app has an email sender" and the app has none/,
		);
		await checked();

		expect((await client.admin("PATCH", `/apps/${app.appid}`, { emailsender: "shop@example.com" })).status).toBe(200);
		expect(await go(editor)).toBe(200);
		const state = await text("[data-testid=sending-state]");
		expect(state).toContain("This app sends this email when a reward is earned, from shop@example.com");
		// The service's PUBLIC_ORIGIN (scripts/dev-service.mjs sets it to the service's own): every email's share link is on it.
		expect(state).not.toContain("no share link");
		const preview = (await page.$eval("[data-testid=preview-text]", (e) => e.textContent ?? "")).trim();
		expect(preview).toMatch(/^Hi Ann,/);
		expect(preview).toContain(`Share your link to earn more: ${service.base}/r/ANN123`);
		await page.$eval("[data-testid=sending-state]", (e) => e.scrollIntoView({ block: "center" }));
		await checked("emails");

		// The real one: Dave buys with Ann's code in the Spring campaign (no hold); Ann's email has the same share line, her code's.
		const dave = await api("register", { email: "dave@example.com", name: "Dave", referrercode: people.annCode });
		const converted = await api("registerconversionevent", {
			userkey: dave.userkey,
			eventname: "Purchase",
			customid: "order-spring-1",
			campaignid: app.other,
			growthhack: "SaaS_Referrals",
		});
		expect(converted.errorcode).toBeUndefined();
		const sent = await waitFor(
			"Ann's reward email",
			async () => {
				const { mail } = (await (await fetch(`${service.base}/dev/mail`)).json()) as { mail: { to: string; text: string }[] };
				return mail.find((m) => m.to === "ann@example.com" && /You earned/.test(m.text));
			},
			WAIT,
		);
		expect(sent.text).toContain(`Share your link to earn more: ${service.base}/r/${people.annCode}`);
		// Line for line the same email, the sample's names and amounts aside.
		const shape = (t: string) =>
			t
				.trim()
				.split("\n")
				.map((line) => line.trim() !== "");
		expect(shape(sent.text), `${sent.text}\n---\n${preview}`).toEqual(shape(preview));
	});

	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet its pages asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
