import { ROLES, type Role } from "../db/admin-tokens";
import { membershipOf } from "../db/members";
import { ApiError } from "../http/errors";
import { COLON } from "../http/router";
import type { RequestAuth } from "./principal";

/**
 * Who may call which admin route (docs/operators.md). Roles, from least to
 * most: viewer reads; reviewer also changes reward statuses and redelivers
 * webhooks; manager also edits campaigns, coupons, imports and the app's logo; owner also
 * changes the app's settings, keys, tokens, and erases and exports people.
 * `superuser` is the deployment's ADMIN_TOKEN alone (apps across the
 * deployment). Every admin route must have a line here: the rights test
 * (test/admin/rights.integration.test.ts) enumerates the routes and fails on
 * one without a rule.
 */
export type Needed = Role | "superuser";

export const RIGHTS: Readonly<Record<string, Needed>> = {
	"POST /apps": "superuser",
	"GET /apps": "superuser",
	"GET /apps/:appid": "viewer",
	"PATCH /apps/:appid": "owner",
	"POST /apps/:appid/rotate-privatekey": "owner",
	"POST /apps/:appid/rotate-webhooksecret": "owner",
	"POST /apps/:appid/testkeys": "owner",
	"DELETE /apps/:appid/testdata": "owner",
	// The logo is branding, as campaigns' look is: a manager's (issue 48).
	"PUT /apps/:appid/logo": "manager",
	"DELETE /apps/:appid/logo": "manager",
	"POST /apps/:appid/campaigns": "manager",
	"GET /apps/:appid/campaigns": "viewer",
	"GET /apps/:appid/campaigns/:campaignid": "viewer",
	"PATCH /apps/:appid/campaigns/:campaignid": "manager",
	"POST /apps/:appid/campaigns/:campaignid/coupons": "manager",
	"POST /apps/:appid/campaigns/:campaignid/default": "manager",
	"POST /apps/:appid/campaigns/:campaignid/archive": "manager",
	"POST /apps/:appid/campaigns/:campaignid/restore": "manager",
	"DELETE /apps/:appid/campaigns/:campaignid": "manager",
	"GET /apps/:appid/campaigns/:campaignid/messages": "viewer",
	"PUT /apps/:appid/campaigns/:campaignid/rewardemail": "manager",
	"PUT /apps/:appid/campaigns/:campaignid/messages/:kind/:language": "manager",
	"DELETE /apps/:appid/campaigns/:campaignid/messages/:kind/:language": "manager",
	"POST /apps/:appid/campaigns/:campaignid/messages/:kind/:language/preview": "viewer",
	"GET /apps/:appid/deliveries": "viewer",
	"GET /apps/:appid/deliveries/:eventid": "viewer",
	"POST /apps/:appid/deliveries/:eventid/redeliver": "reviewer",
	"GET /apps/:appid/webhook-breaker": "viewer",
	"POST /apps/:appid/webhook-breaker/reset": "reviewer",
	"GET /apps/:appid/users": "viewer",
	"GET /apps/:appid/users/:userkey": "viewer",
	"GET /apps/:appid/users/:userkey/friends": "viewer",
	"GET /apps/:appid/users/:userkey/export": "owner",
	"DELETE /apps/:appid/users/:userkey": "owner",
	"GET /apps/:appid/rewards": "viewer",
	"GET /apps/:appid/rewards/:rewarddtlid": "viewer",
	"POST /apps/:appid/rewards/status": "reviewer",
	"GET /apps/:appid/stats": "viewer",
	"GET /apps/:appid/leaderboard": "viewer",
	[`POST /apps/:appid/users${COLON}import`]: "manager",
	"POST /apps/:appid/tokens": "owner",
	"GET /apps/:appid/tokens": "owner",
	"DELETE /apps/:appid/tokens/:tokenid": "owner",
	"POST /apps/:appid/members": "owner",
	"GET /apps/:appid/members": "owner",
	"PATCH /apps/:appid/members/:memberid": "owner",
	"DELETE /apps/:appid/members/:memberid": "owner",
	"GET /apps/:appid/audit": "viewer",
	"POST /apps/:appid/users/:userkey/payouts/retry": "reviewer",
	// Rewinds a user's rewards and balance (docs/deploy.md): the deployment's operator alone, never an app's role.
	[`POST /apps/:appid/users/:userkey/ledger${COLON}restore`]: "superuser",
	// The deployment's shard pool (issue 50): the operator's, across every app.
	"GET /shards": "superuser",
	"GET /shards/:shard": "superuser",
};

/** A route pattern as Hono writes it, as a regular expression with its parameters' names. */
function compile(pattern: string): { regex: RegExp; names: string[] } {
	const names: string[] = [];
	const source = pattern
		.split("/")
		.map((part) => {
			const param = /^:(\w+)(?:\{(.+)\})?$/.exec(part);
			if (!param) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
			names.push(param[1] ?? "");
			return param[2] ? `(${param[2]})` : "([^/]+)";
		})
		.join("/");
	return { regex: new RegExp(`^${source}$`), names };
}

const COMPILED = Object.entries(RIGHTS).map(([key, needed]) => {
	const [method = "", pattern = ""] = key.split(" ");
	return { method, needed, ...compile(pattern) };
});

/** The rule of a request to `path` (relative to /admin/v1), with its app id; null for a path no rule names. */
export function ruleFor(method: string, path: string): { needed: Needed; appid: string | null } | null {
	const verb = method === "HEAD" ? "GET" : method;
	for (const rule of COMPILED) {
		if (rule.method !== verb) continue;
		const match = rule.regex.exec(path);
		if (!match) continue;
		const at = rule.names.indexOf("appid");
		return { needed: rule.needed, appid: at === -1 ? null : decodeURIComponent(match[at + 1] ?? "") };
	}
	return null;
}

const article = (role: Role) => `${role === "owner" ? "an" : "a"} ${role}`;

export const roleAtLeast = (role: Role, needed: Role) => ROLES.indexOf(role) >= ROLES.indexOf(needed);

/**
 * Lets an app-scoped token through, or refuses: another app's routes (or a
 * path no rule names) are 404 as for an unknown app, so a token learns
 * nothing of other apps; a route beyond its role is 403 `forbidden` naming
 * the role needed.
 */
export function authorizeToken(
	token: { appid: string; role: Role },
	method: string,
	path: string,
	caller: "token" | "member" = "token",
): void {
	const rule = ruleFor(method, path);
	// Another app's route is unknown to the token, superuser routes under an app included (a ledger's restore).
	if (rule?.appid && rule.appid !== token.appid) throw new ApiError(404, "app_not_found", "No app with that appid.");
	if (rule?.needed === "superuser") {
		throw new ApiError(403, "forbidden", "This route needs the deployment's admin token (superuser).", { needed: "superuser" });
	}
	if (!rule || rule.appid !== token.appid) throw new ApiError(404, "app_not_found", "No app with that appid.");
	if (!roleAtLeast(token.role, rule.needed)) {
		// Spoken to whoever asks: a script's token, or a person signed in to the dashboard.
		const you = caller === "member" ? `you are ${article(token.role)} in this app` : `this token is ${article(token.role)}`;
		throw new ApiError(403, "forbidden", `This needs the ${rule.needed} role; ${you}.`, {
			needed: rule.needed,
			role: token.role,
		});
	}
}

/**
 * A member signed in to the dashboard: their role in the route's app decides,
 * as for a token of that role; an app they are not a member of is 404.
 */
export async function authorizeMember(
	db: D1Database,
	personid: string,
	method: string,
	path: string,
	iphash: string | null,
): Promise<RequestAuth> {
	const rule = ruleFor(method, path);
	const membership = rule?.appid ? await membershipOf(db, rule.appid, personid) : null;
	// An app the person is not a member of is unknown to them, superuser routes under it included.
	if (!rule || (rule.appid ? !membership : rule.needed !== "superuser"))
		throw new ApiError(404, "app_not_found", "No app with that appid.");
	const role = membership?.role ?? "viewer";
	authorizeToken({ appid: rule?.appid ?? "", role }, method, path, "member");
	return { actor: { type: "member", id: membership?.memberid ?? null, name: membership?.email ?? "", iphash }, role };
}
