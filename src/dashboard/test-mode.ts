import type { Next } from "hono";
import { setCookie } from "hono/cookie";
import { dashboardPathOr } from "../domain/redirect";
import type { Dash, DashContext } from "./context";
import { isTestMode, MODE_COOKIE } from "./mode";

/**
 * The dashboard's "Test data" switch (docs/test-mode.md): a cookie, set by a
 * form on every app page, that makes the pages' admin API calls of an app's
 * data (users, review queue, deliveries, analytics) ask for `?mode=test`.
 * While it is on, every app page says so in a banner, and says plainly when
 * the page has no test side (campaigns, settings, team: shared by both modes),
 * so test data is never taken for live data nor live data for test data.
 */

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

function switchForm(appid: string, csrf: string, on: boolean, here: string): string {
	const next = on ? "live" : "test";
	return `<form method="post" action="/dashboard/apps/${escapeHtml(appid)}/mode" class="mode-switch">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}" /><input type="hidden" name="mode" value="${next}" /><input type="hidden" name="return" value="${escapeHtml(here)}" />
<button type="submit" class="secondary" aria-pressed="${on}">Test data: ${on ? "on" : "off"}</button></form>`;
}

const TEST_SIDE_BANNER = `<p class="flash testmode" role="status" data-testid="test-mode-statement"><strong>Test data.</strong> This page shows what the app's test keys made; live data is hidden. Turn "Test data" off to see it.</p>`;

/** The pages with a test side: each reads its data with `?mode=test` while the switch is on (admin/test-mode.ts). */
const TEST_SIDE = new Set(["users", "review", "rewards", "deliveries", "analytics", "leaderboard"]);

/** Why a page has no test side, in the operator's words (issue 48: every page says which side it shows). */
const SHARED: Record<string, string> = {
	"": 'the app\'s settings and live keys are the same in both modes; its test keys are under "Test keys".',
	campaigns: "campaigns, their rules, messages and coupons are shared: test events use these same campaigns.",
	audit: "the audit log records the changes of both modes.",
	team: "members and their roles are the same in both modes.",
	stripe: "each mode has its own Stripe connection, both set on this page.",
};

function noTestSideBanner(section: string): string {
	const why = SHARED[section] ?? "what it shows is shared by live and test mode.";
	return `<p class="flash testmode" role="status" data-testid="test-mode-statement"><strong>Test data is on.</strong> This page has no test side: ${escapeHtml(why)}</p>`;
}

/** Adds the switch to every app page's header, and the banner while it is on (HTMLRewriter: the pages stay as they are). */
export function testModeChrome() {
	return async (c: DashContext, next: Next) => {
		await next();
		const match = /^\/dashboard\/apps\/([^/]+)(?:\/([^/]+))?/.exec(c.req.path);
		const appid = match?.[1];
		const section = match?.[2] ?? "";
		if (!appid || !c.res.headers.get("content-type")?.startsWith("text/html")) return;
		const on = isTestMode(c);
		const url = new URL(c.req.url);
		const form = switchForm(decodeURIComponent(appid), c.var.session.csrf, on, `${url.pathname}${url.search}`);
		const rewriter = new HTMLRewriter().on("header.top .who", {
			element: (e) => {
				e.prepend(form, { html: true });
			},
		});
		if (on) {
			const banner = TEST_SIDE.has(section) ? TEST_SIDE_BANNER : noTestSideBanner(section);
			rewriter.on("main#main", {
				element: (e) => {
					e.prepend(banner, { html: true });
				},
			});
		}
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
		// Back to the page the switch was pressed on (the same app's pages only), else the app's page.
		const home = `/dashboard/apps/${encodeURIComponent(c.req.param("appid"))}`;
		const asked = dashboardPathOr(form.return, home);
		return c.redirect(asked === home || asked.startsWith(`${home}/`) || asked.startsWith(`${home}?`) ? asked : home, 303);
	});
}
