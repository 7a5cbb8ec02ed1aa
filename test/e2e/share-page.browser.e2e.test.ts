import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { brokenAssets, launchBrowser, seriousAxeViolations } from "./browser";

// The hosted referral page, widget.js and /docs in a real Chromium against `wrangler dev`.

const SHOTS = new URL("../../screenshots/", import.meta.url);
let service: Awaited<ReturnType<typeof startService>>;
let browser: Browser;
const servers: Server[] = [];

/** A product page on its own origin that embeds the referral page with widget.js. */
async function embedSite(): Promise<{ origin: string; embed: (url: string) => string }> {
	let html = "";
	const server = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "text/html" });
		res.end(html);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	servers.push(server);
	const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		origin,
		embed(url: string) {
			html = `<!doctype html><html><body style="margin:0"><h1>Product</h1><script src="${service.base}/widget.js" data-url="${url.replaceAll("&", "&amp;")}"></script><footer id="after">footer</footer></body></html>`;
			return `${origin}/embed`;
		},
	};
}

async function api(operation: string, body: Record<string, unknown>) {
	const res = await fetch(`${service.base}/saas/v1_0/${operation}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	return (await res.json()) as any;
}

async function admin(method: string, path: string, body?: unknown) {
	const res = await fetch(`${service.base}/admin/v1${path}`, {
		method,
		headers: { "content-type": "application/json", authorization: `Bearer ${service.adminToken}` },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	return (await res.json()) as any;
}

let site: Awaited<ReturnType<typeof embedSite>>;
let stranger: Awaited<ReturnType<typeof embedSite>>;
let auth: { apikey: string; privatekey: string };
let ann: any;

beforeAll(async () => {
	mkdirSync(SHOTS, { recursive: true });
	[service, browser] = await Promise.all([startService({ name: "browser" }), launchBrowser()]);
	site = await embedSite();
	stranger = await embedSite();
	const app = await admin("POST", "/apps", { name: "Browser shop", landingurl: `${site.origin}/join` });
	await admin("POST", `/apps/${app.appid}/campaigns`, {
		campaignname: "Give $10, get $10",
		offertitle: "Give $10, get $10",
		offerdescription: "Your friends get $10 off their first order, and you get $10 for each.",
		campaignbgcolor: "#1d3557",
		widgetfont: "Georgia",
		terms: "Be nice.\r\nOne reward per friend.",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		socialactions: [
			{
				socialactionid: "5",
				socialactionname: "Email",
				sharemessage: "I use this shop: SHARE_URL (code SHARE_CODE)",
				sharetitle: "$10 for you",
				displayorder: 3,
			},
			{ socialactionid: "1", socialactionname: "Facebook", sharemessage: "Get $10 with SHARE_CODE", displayorder: 1 },
			{ socialactionid: "2", socialactionname: "X", sharemessage: "$10 off: SHARE_URL", displayorder: 2 },
			{ socialactionid: "14", socialactionname: "Your link", displayorder: 4 },
		],
	});
	auth = { apikey: app.apikey, privatekey: app.privatekey };
	ann = await api("register", { ...auth, email: "ann@example.org", name: "Ann" });
	const friend = await api("register", { ...auth, email: "fred@example.org", referrercode: ann.referralcode });
	await api("registerconversionevent", {
		...auth,
		userkey: friend.userkey,
		eventname: "Signup",
		customid: "1",
		growthhack: "SaaS_Referrals",
	});
});

afterAll(async () => {
	await browser?.close();
	await service?.stop();
	for (const server of servers) server.close();
});

const pageUrl = async () => (await api("getsharepage", { ...auth, userkey: ann.userkey })).url as string;

async function open(url: string, width: number, js = true): Promise<{ page: Page; requests: string[]; status: number }> {
	const page = await browser.newPage();
	await page.setViewport({ width, height: 800 });
	await page.setJavaScriptEnabled(js);
	const requests: string[] = [];
	page.on("request", (r) => requests.push(r.url()));
	const response = await page.goto(url, { waitUntil: "load" });
	return { page, requests, status: response?.status() ?? 0 };
}

describe("the referral page in a browser", () => {
	for (const width of [390, 1280]) {
		it(`shows the offer, code, share buttons in order and the styles at ${width} px, with no request elsewhere`, async () => {
			const url = await pageUrl();
			const { page, requests, status } = await open(url, width);
			expect(status).toBe(200);
			expect(await page.$eval("#offer-title", (e) => e.textContent)).toBe("Give $10, get $10");
			expect(await page.$eval("#offer-description", (e) => e.textContent)).toContain("$10 off their first order");
			expect(await page.$eval("#referralcode", (e) => e.textContent)).toBe(ann.referralcode);
			expect(await page.$eval("#shareurl", (e) => (e as HTMLInputElement).value)).toBe(ann.shareurl);
			const buttons = await page.$$eval("#share-buttons a", (links) =>
				links.map((a) => ({ label: a.textContent, href: a.getAttribute("href")! })),
			);
			expect(buttons.map((b) => b.label)).toEqual(["Share on Facebook", "Post on X", "Send by email", "Open your link"]);
			expect(new URL(buttons[0]!.href).origin).toBe("https://www.facebook.com");
			expect(new URL(buttons[0]!.href).searchParams.get("quote")).toBe(`Get $10 with ${ann.referralcode}`);
			expect(new URL(buttons[1]!.href).searchParams.get("text")).toBe(`$10 off: ${ann.shareurl}`);
			expect(decodeURIComponent(buttons[2]!.href)).toBe(
				`mailto:?subject=$10 for you&body=I use this shop: ${ann.shareurl} (code ${ann.referralcode})`,
			);
			expect(buttons[3]!.href).toBe(ann.shareurl);
			expect(await page.$eval("#friends-joined", (e) => e.textContent)).toBe("1");
			expect(await page.$eval('[data-earned="USD"]', (e) => e.textContent)).toBe("10");
			const style = await page.$eval("body", (b) => ({ bg: getComputedStyle(b).backgroundColor, font: getComputedStyle(b).fontFamily }));
			expect(style.bg).toBe("rgb(29, 53, 87)");
			expect(style.font).toMatch(/^Georgia, system-ui/);
			// Readable on a phone: nothing wider than the viewport.
			expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
			expect(requests.every((r) => r.startsWith(service.base))).toBe(true);
			await page.screenshot({ path: new URL(`share-page-${width}.png`, SHOTS).pathname, fullPage: true });
			await page.close();
		});
	}

	for (const scheme of ["light", "dark"] as const) {
		it(`holds on a ${scheme} host page: visible cards, readable text, axe-clean, terms expandable`, async () => {
			const page = await browser.newPage();
			await page.setBypassCSP(true);
			await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
			await page.goto(await pageUrl(), { waitUntil: "load" });
			const card = await page.$eval(".card", (e) => ({
				bg: getComputedStyle(e).backgroundColor,
				border: getComputedStyle(e).borderTopWidth,
			}));
			expect(card.bg).toBe(scheme === "dark" ? "rgb(28, 28, 30)" : "rgb(255, 255, 255)");
			expect(card.border).toBe("1px");
			expect(await page.$eval("#terms", (d) => (d as HTMLDetailsElement).open)).toBe(false);
			await page.focus("#terms summary");
			await page.keyboard.press("Enter");
			expect(await page.$eval("#terms", (d) => (d as HTMLDetailsElement).open)).toBe(true);
			expect(await page.$eval("#terms .terms", (e) => e.textContent)).toBe("Be nice.\nOne reward per friend.");
			expect(await seriousAxeViolations(page)).toEqual([]);
			await page.screenshot({ path: new URL(`share-page-${scheme}.png`, SHOTS).pathname, fullPage: true });
			await page.close();
		});
	}

	it("speaks the browser's language (French here); the campaign's texts stay as written", async () => {
		const page = await browser.newPage();
		await page.setExtraHTTPHeaders({ "Accept-Language": "fr-FR,fr;q=0.9,en;q=0.5" });
		await page.goto(await pageUrl(), { waitUntil: "load" });
		expect(await page.$eval("html", (e) => e.lang)).toBe("fr");
		expect(await page.$eval("#link-heading", (e) => e.textContent)).toBe("Votre lien de parrainage");
		expect(await page.$$eval("#share-buttons a", (links) => links.map((a) => a.textContent))).toEqual([
			"Partager sur Facebook",
			"Publier sur X",
			"Envoyer par e-mail",
			"Ouvrir votre lien",
		]);
		expect(await page.$eval("#offer-title", (e) => e.textContent)).toBe("Give $10, get $10");
		await page.close();
	});

	it("copies the link with the copy button", async () => {
		const url = await pageUrl();
		await browser
			.defaultBrowserContext()
			.overridePermissions(service.base, ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"]);
		const { page } = await open(url, 390);
		expect(await page.$eval("#copy", (b) => (b as HTMLButtonElement).hidden)).toBe(false);
		await page.focus("#copy");
		await page.keyboard.press("Enter");
		await page.waitForFunction(() => document.getElementById("copy-status")?.textContent === "Link copied", { timeout: 10_000 });
		expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(ann.shareurl);
		await page.close();
	});

	it("works without JavaScript except the copy button", async () => {
		const { page } = await open(await pageUrl(), 390, false);
		expect(await page.$eval("#copy", (b) => getComputedStyle(b).display)).toBe("none");
		expect(await page.$$eval("#share-buttons a", (links) => links.length)).toBe(4);
		expect(await page.$eval("#referralcode", (e) => e.textContent)).toBe(ann.referralcode);
		await page.close();
	});

	it("is a 403 page for an expired or a tampered link", async () => {
		const url = new URL(await pageUrl());
		const expired = new URL(url);
		expired.searchParams.set("exp", String(Math.floor(Date.now() / 1000) - 10));
		const tampered = new URL(url);
		tampered.searchParams.set("sig", `${url.searchParams.get("sig")!.slice(0, -2)}xx`);
		for (const bad of [expired, tampered]) {
			const { page, status } = await open(bad.toString(), 390);
			expect(status).toBe(403);
			expect(await page.$eval("h1", (e) => e.textContent)).toBe("This link is not valid");
			expect(await page.content()).not.toContain(ann.referralcode);
			await page.close();
		}
	});
});

describe("widget.js", () => {
	for (const width of [390, 1280]) {
		it(`embeds the page in an iframe that sizes itself, on the landing page's origin (${width} px)`, async () => {
			const { page } = await open(site.embed(await pageUrl()), width);
			const handle = await page.waitForSelector("iframe");
			const frame = await handle!.contentFrame();
			await frame.waitForSelector("#referralcode", { timeout: 15_000 });
			expect(await frame.$eval("#referralcode", (e) => e.textContent)).toBe(ann.referralcode);
			// The iframe takes the height the page posts: the whole page shows, without a scrollbar.
			await page.waitForFunction(
				() => {
					const iframe = document.querySelector("iframe")!;
					return iframe.style.height !== "" && Math.abs(iframe.getBoundingClientRect().height - Number.parseFloat(iframe.style.height)) < 1;
				},
				{ timeout: 15_000 },
			);
			const inner = await frame.evaluate(() => Math.ceil(document.documentElement.getBoundingClientRect().height));
			const outer = await page.$eval("iframe", (f) => f.getBoundingClientRect().height);
			expect(Math.abs(inner - outer)).toBeLessThanOrEqual(1);
			expect(await page.$eval("iframe", (f) => f.nextElementSibling?.id)).toBe("after");
			await page.screenshot({ path: new URL(`widget-${width}.png`, SHOTS).pathname, fullPage: true });
			await page.close();
		});
	}

	it("is refused by the browser on any other origin (frame-ancestors)", async () => {
		const page = await browser.newPage();
		const refused = new Promise<string>((resolve) =>
			page.on("console", (m) => {
				if (m.text().includes("frame-ancestors")) resolve(m.text());
			}),
		);
		await page.goto(stranger.embed(await pageUrl()), { waitUntil: "load" });
		// Chromium reports the refusal on the embedding page's console and shows its error page in the frame.
		expect(await refused).toContain(`frame-ancestors ${site.origin}`);
		const frame = await (await page.waitForSelector("iframe"))!.contentFrame();
		expect(await frame.$("#referralcode")).toBeNull();
		await page.close();
	});
});

describe("/docs", () => {
	it("renders the API reference from assets of this Worker only, within its CSP", async () => {
		const page = await browser.newPage();
		await page.setViewport({ width: 1280, height: 800 });
		const requests: string[] = [];
		const violations: string[] = [];
		page.on("request", (r) => requests.push(r.url()));
		page.on("console", (m) => m.text().includes("Content Security Policy") && violations.push(m.text()));
		await page.goto(`${service.base}/docs`, { waitUntil: "load" });
		await page.waitForFunction(() => document.body.textContent?.includes("A signed link (1 hour) to the user's hosted referral page"), {
			timeout: 30_000,
		});
		expect(await page.evaluate(() => document.body.textContent)).toContain("Referral and rewards API");
		expect(requests.filter((r) => !r.startsWith(service.base) && !r.startsWith("data:"))).toEqual([]);
		expect(violations).toEqual([]);
		await page.screenshot({ path: new URL("docs-1280.png", SHOTS).pathname });
		await page.close();
	});
});

describe("every page above", () => {
	// A page that works without its script would not show the loss otherwise (test/e2e/browser.ts).
	it("got every script and stylesheet it asked for", () => {
		expect(brokenAssets(browser)).toEqual([]);
	});
});
