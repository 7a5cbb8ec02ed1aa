import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { describe, expect, it } from "vitest";
import { type AdminEnv, handingOff } from "../../src/admin/principal";
import { RIGHTS, roleAtLeast } from "../../src/admin/rights";
import { adminRoutes } from "../../src/admin/routes";
import { ROLES, type Role } from "../../src/db/admin-tokens";
import { findPersonByEmail } from "../../src/db/members";
import { ApiError, errorBody } from "../../src/http/errors";
import { COLON, routedPath } from "../../src/http/router";
import { admin, createApp, request } from "../support/api";
import { acceptFromMailbox } from "../support/mailbox";

/**
 * Scoped admin tokens (issue 22): the rights table, exhaustively. The routes
 * are enumerated from the admin router itself, so a new route without a rule
 * fails here; every route is called with a token of every role and must be
 * let through (any status but 401/403) exactly when the table says so.
 */

const routes = () =>
	[...new Set(adminRoutes.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path.replace(/\/$/, "") || "/"}`))].sort();

/** A concrete path for a route pattern: the app's id, made-up values for the rest. */
const concrete = (pattern: string, appid: string) =>
	pattern
		.replace(":appid", appid)
		.replace(COLON, ":")
		.replace(/\/:(\w+)/g, (_m, name: string) => `/${SAMPLE_PARAMS[name] ?? "x"}`);

const SAMPLE_PARAMS: Record<string, string> = {
	campaignid: "1",
	userkey: "u0000000000000000000",
	eventid: "evt_none",
	tokenid: "tok_none",
	memberid: "mem_none",
};

/** The admin API as the dashboard calls it for a signed-in member (in process: admin/principal.ts). */
const inProcess = new Hono<AdminEnv>({ router: new RegExpRouter(), getPath: routedPath }).route("/admin/v1", adminRoutes);
inProcess.onError((err, c) =>
	err instanceof ApiError ? c.json(errorBody(err.errorcode, err.message, err.extra), err.status) : c.json({ message: String(err) }, 500),
);
async function callAsPerson(method: string, path: string, personid: string) {
	const request = new Request(`http://dashboard.internal/admin/v1${path}`, {
		method,
		headers: { "content-type": "application/json" },
		...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }),
	});
	const res = await inProcess.fetch(request, handingOff(env, { person: { personid, ip: "203.0.113.9", origin: "http://service.test" } }));
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** A member of every role in `appid`, each a person of their own, by role: their personids. */
async function membersFor(appid: string): Promise<Record<Role, string>> {
	const out: Partial<Record<Role, string>> = {};
	for (const role of ROLES) {
		const email = `${role}-${crypto.randomUUID()}@example.com`;
		expect((await admin("POST", `/apps/${appid}/members`, { email, role })).status).toBe(201);
		// A membership gives nothing until its own invitation is accepted (issue 32).
		expect((await acceptFromMailbox(appid, email, "a long enough password")).res.status).toBe(303);
		out[role] = (await findPersonByEmail(env.DB, email))!.personid;
	}
	return out as Record<Role, string>;
}

async function call(method: string, path: string, token: string) {
	const res = await request(`/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }),
	});
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function tokensFor(appid: string): Promise<Record<Role, string>> {
	const out: Partial<Record<Role, string>> = {};
	for (const role of ROLES) {
		const created = await admin("POST", `/apps/${appid}/tokens`, { name: `${role} token`, role });
		expect(created.status).toBe(201);
		out[role] = created.body.token;
	}
	return out as Record<Role, string>;
}

describe("admin rights", { timeout: 120_000 }, () => {
	it("every admin route has exactly one rule, and every rule a route", () => {
		const listed = routes();
		expect(listed.filter((r) => RIGHTS[r] === undefined)).toEqual([]);
		expect(Object.keys(RIGHTS).filter((r) => !listed.includes(r))).toEqual([]);
	});

	it("every route x every role: through when the role suffices, 403 forbidden naming the role needed otherwise", async () => {
		const app = await createApp();
		const tokens = await tokensFor(app.appid);
		const wrong: string[] = [];
		for (const route of routes()) {
			const [method = "", pattern = ""] = route.split(" ");
			const needed = RIGHTS[route]!;
			for (const role of ROLES) {
				const res = await call(method, concrete(pattern, app.appid), tokens[role]);
				const allowed = needed !== "superuser" && roleAtLeast(role, needed);
				const ok = allowed
					? res.status !== 401 && res.status !== 403
					: res.status === 403 && res.body.errorcode === "forbidden" && res.body.needed === needed;
				if (!ok) wrong.push(`${route} as ${role}: ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
			}
		}
		expect(wrong).toEqual([]);
	});

	it("every route x every role of a member signed in to the dashboard: the same table; other apps are 404", async () => {
		const [app, other] = [await createApp(), await createApp()];
		const people = await membersFor(app.appid);
		const wrong: string[] = [];
		for (const route of routes()) {
			const [method = "", pattern = ""] = route.split(" ");
			const needed = RIGHTS[route]!;
			for (const role of ROLES) {
				const res = await callAsPerson(method, concrete(pattern, app.appid), people[role]);
				const allowed = needed !== "superuser" && roleAtLeast(role, needed);
				const ok = allowed
					? res.status !== 401 && res.status !== 403
					: res.status === 403 && res.body.errorcode === "forbidden" && res.body.needed === needed;
				if (!ok) wrong.push(`${route} as member ${role}: ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
				if (pattern.includes(":appid")) {
					const crossing = await callAsPerson(method, concrete(pattern, other.appid), people[role]);
					if (crossing.status !== 404) wrong.push(`${route} of another app as member ${role}: ${crossing.status}`);
				}
			}
		}
		expect(wrong).toEqual([]);
	});

	it("another app's routes are 404 as for an unknown app, whatever the role; a revoked token is 401 at once", async () => {
		const [mine, theirs] = [await createApp(), await createApp()];
		const tokens = await tokensFor(mine.appid);
		for (const role of ROLES) {
			for (const path of [`/apps/${theirs.appid}`, `/apps/${theirs.appid}/rewards`, `/apps/${theirs.appid}/tokens`]) {
				const res = await call("GET", path, tokens[role]);
				expect(res, `${role} ${path}`).toMatchObject({ status: 404, body: { errorcode: "app_not_found" } });
			}
		}
		const listed = (await admin("GET", `/apps/${mine.appid}/tokens`)).body.tokens as Record<string, unknown>[];
		expect(listed).toHaveLength(4);
		expect(JSON.stringify(listed)).not.toContain("adm_");
		const viewer = listed.find((t) => t.role === "viewer")!;
		expect((await call("DELETE", `/apps/${mine.appid}/tokens/${viewer.tokenid}`, tokens.owner)).status).toBe(200);
		expect((await call("GET", `/apps/${mine.appid}/rewards`, tokens.viewer)).status).toBe(401);
		expect((await call("GET", `/apps/${mine.appid}/rewards`, tokens.reviewer)).status).toBe(200);
	});

	it("only an owner reads the webhook secret; a token of another role sees the app without it", async () => {
		const app = await createApp();
		const tokens = await tokensFor(app.appid);
		expect((await call("GET", `/apps/${app.appid}`, tokens.owner)).body.webhooksecret).toMatch(/^whsec_/);
		expect((await call("GET", `/apps/${app.appid}`, tokens.manager)).body).toMatchObject({ appid: app.appid, webhooksecret: null });
		const bad = await admin("POST", `/apps/${app.appid}/tokens`, { name: "x", role: "admin" });
		expect(bad.status).toBe(400);
		expect(bad.body.fields).toEqual(["role"]);
	});
});

describe("one way to carry auth (issue 48)", () => {
	// A route behind the admin middleware that answers what Hono's typed context variables hold: the principal lives
	// there (as the dashboard's session does), not in a side table keyed by the request.
	const probe = new Hono<AdminEnv>({ router: new RegExpRouter(), getPath: routedPath })
		.route("/admin/v1", adminRoutes)
		.get("/admin/v1/apps/:appid/principal-probe", (c) => c.json({ auth: c.var.auth ?? null, person: c.var.person ?? null }));
	probe.onError((err, c) => (err instanceof ApiError ? c.json(errorBody(err.errorcode, err.message), err.status) : c.json({}, 500)));

	it("the middleware's principal is in the context variables: the bearer's actor, the dashboard's person", async () => {
		const app = await createApp();
		// (The superuser: a probe path has no line in the rights table, which refuses a scoped token on it.)
		const byToken = await probe.fetch(
			new Request(`http://service.test/admin/v1/apps/${app.appid}/principal-probe`, {
				headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
			}),
			env,
		);
		expect(await byToken.json()).toMatchObject({ auth: { actor: { type: "superuser", name: "superuser" } }, person: null });

		const person = { personid: null, ip: "203.0.113.9", origin: "http://dashboard.test" };
		const asDashboard = await probe.fetch(
			new Request(`http://dashboard.internal/admin/v1/apps/${app.appid}/principal-probe`),
			handingOff(env, { person }),
		);
		expect(await asDashboard.json()).toMatchObject({ auth: { actor: { type: "superuser" } }, person });

		// Nothing an HTTP caller sends makes it the dashboard: without a hand-off and a token, refused.
		const anonymous = await probe.fetch(new Request(`http://service.test/admin/v1/apps/${app.appid}/principal-probe`), env);
		expect(anonymous.status).toBe(401);
	});
});
