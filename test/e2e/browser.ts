import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

/**
 * A headless Chromium for browser tests: the binary shipped inside the
 * `@sparticuz/chromium` npm package (nothing else to install), driven by
 * puppeteer-core.
 */
export async function launchBrowser(): Promise<Browser> {
	const browser = await puppeteer.launch({
		executablePath: await chromium.executablePath(),
		args: chromium.args,
		headless: true,
		defaultViewport: { width: 1280, height: 800 },
	});
	const broken: string[] = [];
	brokenByBrowser.set(browser, broken);
	browser.on("targetcreated", async (target) => {
		const page = await target.page();
		page?.on("response", (res) => {
			if (["script", "stylesheet"].includes(res.request().resourceType()) && res.status() >= 400)
				broken.push(`${res.status()} ${res.url()}`);
		});
	});
	return browser;
}

const brokenByBrowser = new WeakMap<Browser, string[]>();

/**
 * The scripts and stylesheets the browser's pages asked for and did not get (status 400 or more), so far. A page
 * that works without its script (progressive enhancement) would not show the loss otherwise: a wrong
 * run_worker_first rule once sent the dashboard's own scripts to the asset layer, answered 404.
 */
export const brokenAssets = (browser: Browser): string[] => [...(brokenByBrowser.get(browser) ?? [])];

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Serious or critical axe-core violations of the page as it is now. The page
 * must have been opened with `setBypassCSP(true)` so axe can be injected (the
 * pages themselves run under their CSP); throws when axe did not really run.
 */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
	await page.evaluate(AXE);
	const result = (await page.evaluate(() =>
		(globalThis as unknown as { axe: { run(d: Document, o: unknown): Promise<unknown> } }).axe.run(document, {
			resultTypes: ["violations"],
		}),
	)) as { violations: { id: string; impact: string; nodes: { target: string[] }[] }[]; passes: unknown[] };
	if (result.passes.length === 0) throw new Error("axe-core did not run");
	return result.violations
		.filter((v) => v.impact === "serious" || v.impact === "critical")
		.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * Draws this run's `wrangler dev` address as `npm start`'s (127.0.0.1:8787) in
 * the page as it is now: its text, its fields and its preview frames
 * (`iframe[srcdoc]`, reloaded). Called just before a screenshot of the docs,
 * so a share link on the page does not make the image differ on every run
 * (each run gets a free port) and a test run leaves the tree clean.
 */
export async function drawSteadyOrigin(page: Page, base: string): Promise<void> {
	const from = new URL(base).host;
	await page.evaluate(
		async (from, to) => {
			const swap = (s: string) => s.split(from).join(to);
			const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
			for (let node = walker.nextNode(); node; node = walker.nextNode()) {
				if (node.nodeValue?.includes(from)) node.nodeValue = swap(node.nodeValue);
			}
			for (const field of document.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>("input, textarea")) {
				if (field.type !== "file" && field.value.includes(from)) field.value = swap(field.value);
			}
			const frames = [...document.querySelectorAll("iframe[srcdoc]")].filter((f) => f.getAttribute("srcdoc")?.includes(from));
			await Promise.all(
				frames.map(
					(frame) =>
						new Promise((loaded) => {
							frame.addEventListener("load", loaded, { once: true });
							frame.setAttribute("srcdoc", swap(frame.getAttribute("srcdoc") ?? ""));
						}),
				),
			);
		},
		from,
		"127.0.0.1:8787",
	);
}

/**
 * Where a walkthrough screenshot goes: docs/screenshots/ when DOCS_SCREENSHOTS=1 (regenerating the images
 * docs/operators.md shows), else the ignored screenshots/ at the root, so a test run leaves the tree as it was.
 */
export function docsScreenshots(): string {
	const dir = process.env.DOCS_SCREENSHOTS === "1" ? "../../docs/screenshots/" : "../../screenshots/";
	const path = new URL(dir, import.meta.url).pathname;
	mkdirSync(path, { recursive: true });
	return path;
}

/** The `dt` -> `dd` text pairs of a definition list on the page. */
export const definitionList = (page: Page, selector: string): Promise<Record<string, string>> =>
	page.$eval(selector, (dl) => {
		const out: Record<string, string> = {};
		for (const dt of dl.querySelectorAll("dt"))
			out[dt.textContent?.trim() ?? ""] = dt.nextElementSibling?.textContent?.replace(/\s+/g, " ").trim() ?? "";
		return out;
	});
