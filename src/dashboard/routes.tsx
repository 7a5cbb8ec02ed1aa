/** @jsxImportSource hono/jsx */
import { type Context, Hono, type Next } from "hono";
import { roleAtLeast } from "../admin/rights";
import { ROLES } from "../db/admin-tokens";
import { constantTimeEqual } from "../domain/crypto";
import { adminTokenRefused, INSECURE_MESSAGE } from "../http/admin-token";
import type { ErrorCode } from "../http/errors";
import { clientIp, RETRY_AFTER_SECONDS } from "../http/rate-limits";
import { errorDocsUrl, logErrorAnswer, requestIdOf } from "../http/request-id";
import { busyError } from "../http/service-busy";
import { unavailableDatabase } from "../instrument/d1-availability";
import { apiFor } from "./api";
import type { DashContext, DashEnv } from "./context";
import { Csrf, ErrorReference, Field, Page } from "./layout";
import { registerMemberSignIn } from "./members";
import { registerAnalytics } from "./pages/analytics";
import { registerApps } from "./pages/apps";
import { registerAudit } from "./pages/audit";
import { registerCampaigns } from "./pages/campaigns";
import { registerDeliveries } from "./pages/deliveries";
import { registerLeaderboard } from "./pages/leaderboard";
import { registerMail } from "./pages/mail";
import { registerMessages } from "./pages/messages";
import { registerReview } from "./pages/review";
import { registerStripe } from "./pages/stripe";
import { registerTeam } from "./pages/team";
import { registerUsers } from "./pages/users";
import { PASSKEY_SCRIPT } from "./passkey-script";
import { PASSKEY_ENROLMENT_PATHS, PASSKEY_SCRIPTS, PasskeySignIn, registerAccount, registerPasskeySignIn } from "./passkeys";
import { registerPasswordReset } from "./reset";
import { roleIn } from "./role";
import { SCRIPT } from "./script";
import { checkLoginCsrf, endSession, loginCsrf, readSession, startSession } from "./session";
import { checkSignIn } from "./sign-in";
import { CSS } from "./style";
import { registerTestModeSwitch, testModeChrome } from "./test-mode";

/**
 * The dashboard, under /dashboard: server-rendered pages over the admin API.
 * Every page works without script; app.js only adds conveniences.
 */
export const dashboardRoutes = new Hono<DashEnv>();

dashboardRoutes.use("*", async (c, next) => {
	await next();
	c.header("X-Frame-Options", "DENY");
	// img-src https: for an app's logo (an https URL the operator chose) in the settings and the email preview.
	c.header(
		"Content-Security-Policy",
		"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; frame-ancestors 'none'",
	);
	c.header("Referrer-Policy", "same-origin");
	if (!c.req.path.startsWith("/dashboard/static/")) c.header("Cache-Control", "no-store");
});

dashboardRoutes.get("/static/app.css", (c) =>
	c.body(CSS, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "max-age=300" }),
);
dashboardRoutes.get("/static/app.js", (c) =>
	c.body(SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "max-age=300" }),
);
dashboardRoutes.get("/static/passkeys.js", (c) =>
	c.body(PASSKEY_SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "max-age=300" }),
);

// A deployment with a guessable ADMIN_TOKEN serves no page (http/admin-token.ts); the static files above stay.
dashboardRoutes.use("*", async (c, next) => {
	if (adminTokenRefused(c.env)) return c.html(<Page title="Dashboard off" error={INSECURE_MESSAGE} />, 503);
	await next();
});

const loginPage = (csrf: string, error?: string) => (
	<Page title="Sign in" error={error} scripts={PASSKEY_SCRIPTS}>
		<PasskeySignIn csrf={csrf} />
		<form class="grid login" method="post" action="/dashboard/login/member" aria-labelledby="member-sign-in">
			<h2 id="member-sign-in">Members</h2>
			<Csrf token={csrf} />
			<Field label="Email" name="email" type="email" required attrs={{ autocomplete: "username" }} />
			<Field label="Password" name="password" type="password" required attrs={{ autocomplete: "current-password" }} />
			<div>
				<button type="submit">Sign in as a member</button>
			</div>
			<p>
				<a href="/dashboard/reset">Forgot your password?</a>
			</p>
		</form>
		<form class="grid login" method="post" action="/dashboard/login" aria-labelledby="token-sign-in">
			<h2 id="token-sign-in">Set-up</h2>
			<Csrf token={csrf} />
			<p>Sign in with the service's admin token (ADMIN_TOKEN). `npm start` prints it for local use.</p>
			<Field label="Admin token" name="token" type="password" required attrs={{ autocomplete: "current-password" }} />
			<div>
				<button type="submit">Sign in</button>
			</div>
		</form>
	</Page>
);

dashboardRoutes.get("/login", async (c) => {
	if (await readSession(c)) return c.redirect("/dashboard", 303);
	return c.html(loginPage(await loginCsrf(c)));
});

dashboardRoutes.post("/login", async (c) => {
	const form = await c.req.parseBody();
	if (!(await checkLoginCsrf(c, String(form._csrf ?? ""))))
		return c.html(loginPage(await loginCsrf(c), "The form expired; try again."), 403);
	// Failed sign-ins are limited per client IP, together with wrong bearer tokens on the admin API.
	const outcome = await checkSignIn(c.env, clientIp(c.req.raw), String(form.token ?? ""));
	if (outcome === "throttled") {
		c.header("Retry-After", String(RETRY_AFTER_SECONDS));
		return c.html(loginPage(await loginCsrf(c), "Too many failed sign-ins from this address. Wait 10 seconds."), 429);
	}
	if (outcome === "wrong") return c.html(loginPage(await loginCsrf(c), "That token is not the admin token."), 401);
	await startSession(c, null, "token");
	return c.redirect("/dashboard", 303);
});

registerMemberSignIn(dashboardRoutes, loginPage);
registerPasskeySignIn(dashboardRoutes, loginPage);
registerPasswordReset(dashboardRoutes);
registerMail(dashboardRoutes);

// Everything below needs a session; every POST needs its CSRF token.
dashboardRoutes.use("*", async (c, next) => {
	const session = await readSession(c);
	if (!session) {
		if (c.req.method === "GET") return c.redirect("/dashboard/login", 303);
		return c.html(<Page title="Signed out" error="Your session ended. Sign in again." />, 401);
	}
	if (c.req.method === "POST") {
		const form = await c.req.parseBody();
		if (!constantTimeEqual(String(form._csrf ?? ""), session.csrf)) {
			return c.html(<Page title="Refused" error="This form was not sent by the dashboard (missing or wrong CSRF token)." />, 403);
		}
	}
	c.set("session", session);
	c.set("api", apiFor(c, session.personid));
	// A member of an app that requires passkeys, signed in without one: their first passkey before any other page.
	if (session.passkeyNeeded && !PASSKEY_ENROLMENT_PATHS.includes(c.req.path)) {
		// The account page says why (its "passkey needed" notice).
		if (c.req.method === "GET") return c.redirect("/dashboard/account", 303);
		const message = "An app you are a member of requires a passkey: register one on your account page to continue.";
		return c.html(<Page title="Passkey needed" csrf={session.csrf} error={message} />, 403);
	}
	await next();
});

// Once: Hono's "/apps/:appid/*" also matches the app's own page, which a second registration drew the switch on twice.
dashboardRoutes.use("/apps/:appid/*", testModeChrome());
registerTestModeSwitch(dashboardRoutes);

dashboardRoutes.post("/logout", async (c) => {
	await endSession(c, c.var.session);
	return c.redirect("/dashboard/login", 303);
});

/**
 * Each role sees only the tabs it may use: a tab marked with the role it
 * needs (layout.tsx) is taken out of a member's page when their role is
 * below it, instead of leading to a 403.
 */
const tabsByRole = async (c: DashContext, next: Next) => {
	await next();
	const personid = c.var.session?.personid;
	if (!personid || !c.res.headers.get("content-type")?.includes("text/html")) return;
	const role = await roleIn(c, c.req.param("appid") ?? "");
	c.res = new HTMLRewriter()
		.on("nav.tabs a[data-needs]", {
			element(link) {
				const needs = ROLES.find((r) => r === link.getAttribute("data-needs"));
				if (needs && !roleAtLeast(role, needs)) link.remove();
			},
		})
		.transform(c.res);
};
dashboardRoutes.use("/apps/:appid", tabsByRole);
dashboardRoutes.use("/apps/:appid/*", tabsByRole);

registerAccount(dashboardRoutes);
registerApps(dashboardRoutes);
registerCampaigns(dashboardRoutes);
registerMessages(dashboardRoutes);
registerUsers(dashboardRoutes);
registerReview(dashboardRoutes);
registerDeliveries(dashboardRoutes);
registerAnalytics(dashboardRoutes);
registerAudit(dashboardRoutes);
registerLeaderboard(dashboardRoutes);
registerTeam(dashboardRoutes);
registerStripe(dashboardRoutes);

/**
 * An error page: its message, and the request id and docs link every error
 * answer carries (http/request-id.ts), with the log line of that id.
 */
function errorPage(c: Context<DashEnv>, status: 403 | 404 | 500 | 503, errorcode: ErrorCode, title: string, message: string) {
	const requestid = requestIdOf(c.req.raw);
	logErrorAnswer(c.req.raw, status, errorcode, requestid);
	const docs = errorDocsUrl(new URL(c.req.url).origin, errorcode);
	return c.html(
		<Page title={title} error={message}>
			<ErrorReference requestid={requestid} errorcode={errorcode} docs={docs} />
		</Page>,
		status,
	);
}

dashboardRoutes.notFound((c) => errorPage(c, 404, "not_found", "Not found", "No such page."));

dashboardRoutes.onError((err, c) => {
	const busy = busyError(err);
	if (busy) {
		console.error(
			JSON.stringify({
				msg: "D1 unavailable: dashboard answered 503",
				path: c.req.path,
				database: unavailableDatabase(err),
				error: String(err),
			}),
		);
		for (const [name, value] of Object.entries(busy.headers)) c.header(name, value);
		return errorPage(c, 503, "service_busy", "Busy", "The service is busy. Try again in a few seconds.");
	}
	const status = (err as { status?: number }).status;
	if (status === 404) return errorPage(c, 404, "not_found", "Not found", err.message);
	if (status === 403) return errorPage(c, 403, "forbidden", "Not allowed", err.message);
	console.error(JSON.stringify({ msg: "dashboard error", requestid: requestIdOf(c.req.raw), error: String(err), stack: err.stack }));
	return errorPage(c, 500, "internal_error", "Something went wrong", "The page could not be shown. Try again.");
});
