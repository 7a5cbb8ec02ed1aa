import type { Context, Next } from "hono";
import { findTestApp } from "../db/apps";
import { ApiError, badRequest } from "../http/errors";
import { type AdminContext, authOf, handingOff } from "./principal";

/**
 * `?mode=test` on the admin routes of an app's data (docs/test-mode.md): the
 * request is authenticated and its rights checked on the live app's path, then
 * served by the same routes on the test twin's appid, so every read and change
 * of users, rewards, deliveries, the webhook breaker and stats sees only test
 * data. Without it (or `mode=live`) nothing changes. A twin's own appid is not
 * an app of the admin API: it is reached only this way.
 */
const DATA_ROUTES = /^\/apps\/[^/]+\/(users|rewards|stats|deliveries|webhook-breaker|leaderboard)(\/|$|:)/;
/** A campaign and its coupons: shared by both modes, each mode with its own pool; the route reads `mode` itself (poolMode). */
const POOL_ROUTES = /^\/apps\/[^/]+\/campaigns\/[^/]+(\/coupons)?$/;

/** Whether `?mode=test` applies to an admin route (the OpenAPI document lists the parameter on those). */
export function takesMode(method: string, path: string): boolean {
	return DATA_ROUTES.test(path) || (POOL_ROUTES.test(path) && (method === "get" || path.endsWith("/coupons")));
}

/** Which coupon pool a campaign route means: `?mode=test` the test pool, otherwise the live one (docs/test-mode.md). */
export const poolIsLive = (c: Context) => c.req.query("mode") !== "test";

/** `path` (relative to /admin/v1) with mode=test when it is a data route (the dashboard's switch, dashboard/test-mode.ts). */
export function withTestMode(path: string): string {
	const [route = ""] = path.split("?");
	if (!DATA_ROUTES.test(route)) return path;
	return `${path}${path.includes("?") ? "&" : "?"}mode=test`;
}

export type AdminDispatch = (request: Request, env: Env, ctx: AdminContext["executionCtx"]) => Response | Promise<Response>;

export function testModeSwitch(dispatch: AdminDispatch) {
	return async (c: AdminContext, next: Next) => {
		const appid = c.req.param("appid") ?? "";
		if (c.var.twin) return next();
		if (appid.endsWith("_test")) throw new ApiError(404, "app_not_found", "No app with that appid.");
		const mode = c.req.query("mode");
		if (mode === undefined || mode === "live") return next();
		if (mode !== "test") throw badRequest("mode: expected live or test.", { fields: ["mode"] });
		const path = c.req.path.replace(/^\/admin\/v1/, "");
		// Pool routes read the mode themselves; any other method on a campaign (PATCH, DELETE) changes what both
		// modes share, so `mode=test` there is refused rather than silently ignored.
		if (!takesMode(c.req.method.toLowerCase(), path))
			throw badRequest(
				"mode: test applies to users, rewards, stats, deliveries, the webhook breaker, reading a campaign and its coupon pool.",
				{ fields: ["mode"] },
			);
		if (POOL_ROUTES.test(path)) return next();
		const twin = await findTestApp(c.env.DB, appid);
		if (!twin) throw new ApiError(404, "app_not_found", "The app has no test keys yet (POST /admin/v1/apps/{appid}/testkeys).");
		// adminRoutes' own paths: it is mounted under /admin/v1 by its callers (http/app.ts, dashboard/api.ts).
		const url = new URL(c.req.url);
		url.pathname = path.replace(`/apps/${appid}`, `/apps/${twin.appid}`);
		url.searchParams.delete("mode");
		// Authenticated here, on the live app's path: handed to the twin's routes with the dashboard's person, if any.
		const env = handingOff(c.env, { auth: authOf(c), person: c.var.person });
		return dispatch(new Request(url, c.req.raw), env, c.executionCtx);
	};
}

/**
 * `?mode=test` on an admin route outside an app (`GET /apps`, `POST /apps`, the audit of every app): no test side,
 * so 400 naming `mode` rather than silently ignored (issue 47). Routes of an app are testModeSwitch's.
 */
export async function refuseModeOutsideApps(c: Context, next: Next) {
	const path = c.req.path.replace(/^\/admin\/v1(?=\/)/, "");
	const mode = c.req.query("mode");
	if (mode !== undefined && mode !== "live" && !/^\/apps\/[^/]+/.test(path))
		throw badRequest("mode: this route has no test side; only the routes of an app's data take mode=test.", { fields: ["mode"] });
	await next();
}
