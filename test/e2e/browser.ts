import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

/**
 * A headless Chromium for browser tests: the binary shipped inside the
 * `@sparticuz/chromium` npm package (nothing else to install), driven by
 * puppeteer-core.
 */
export async function launchBrowser(): Promise<Browser> {
	return puppeteer.launch({
		executablePath: await chromium.executablePath(),
		args: chromium.args,
		headless: true,
		defaultViewport: { width: 1280, height: 800 },
	});
}

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
