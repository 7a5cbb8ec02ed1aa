import chromium from "@sparticuz/chromium";
import puppeteer, { type Browser } from "puppeteer-core";

/**
 * A headless Chromium for browser tests: puppeteer-core driving the binary
 * shipped inside the @sparticuz/chromium npm package (no download at test time).
 */
export async function launchBrowser(): Promise<Browser> {
	return puppeteer.launch({
		executablePath: await chromium.executablePath(),
		args: chromium.args,
		headless: true,
		defaultViewport: { width: 1280, height: 800 },
	});
}
