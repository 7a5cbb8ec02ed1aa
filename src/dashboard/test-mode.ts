import type { Next } from "hono";
import { setCookie } from "hono/cookie";
import type { Dash, DashContext } from "./context";
import { isTestMode, MODE_COOKIE } from "./mode";

/**
 * The dashboard's "Test data" switch (docs/test-mode.md): a cookie, set by a
 * form on every app page, that makes the pages' admin API calls of an app's
 * data (users, review queue, deliveries, analytics) ask for `?mode=test`.
 * While it is on, every app page says so in a banner, so test data is never
 * taken for live data.
 */

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function switchForm(appid: string, csrf: string, on: boolean): string {
	const next = on ? "live" : "test";
	return `<form method="post" action="/dashboard/apps/${escapeHtml(appid)}/mode" class="mode-switch">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}" /><input type="hidden" name="mode" value="${next}" />
<button type="submit" class="secondary" aria-pressed="${on}">Test data: ${on ? "on" : "off"}</button></form>`;
}

const BANNER = `<p class="flash testmode" role="status"><strong>Test data.</strong> This page shows what the app's test keys made; live data is hidden. Turn "Test data" off to see it.</p>`;

/** Adds the switch to every app page's header, and the banner while it is on (HTMLRewriter: the pages stay as they are). */
export function testModeChrome() {
	return async (c: DashContext, next: Next) => {
		await next();
		const appid = /^\/dashboard\/apps\/([^/]+)/.exec(c.req.path)?.[1];
		if (!appid || !c.res.headers.get("content-type")?.startsWith("text/html")) return;
		const on = isTestMode(c);
		const form = switchForm(decodeURIComponent(appid), c.var.session.csrf, on);
		const rewriter = new HTMLRewriter().on("header.top", {
			element: (e) => {
				e.append(form, { html: true });
			},
		});
		if (on)
			rewriter.on("main#main", {
				element: (e) => {
					e.prepend(BANNER, { html: true });
				},
			});
		c.res = rewriter.transform(c.res);
	};
}

export function registerTestModeSwitch(dash: Dash): void {
	dash.post("/apps/:appid/mode", async (c) => {
		const form = await c.req.parseBody();
		const on = form.mode === "test";
		setCookie(c, MODE_COOKIE, on ? "test" : "live", {
			path: "/dashboard",
			httpOnly: true,
			sameSite: "Lax",
			secure: c.req.url.startsWith("https:"),
		});
		return c.redirect(`/dashboard/apps/${encodeURIComponent(c.req.param("appid"))}`, 303);
	});
}
