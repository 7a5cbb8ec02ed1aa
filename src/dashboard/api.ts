import type { Context } from "hono";
import { Hono } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { z } from "zod";
import { type AdminEnv, handingOff } from "../admin/principal";
import { adminRoutes } from "../admin/routes";
import { ApiError, errorBody } from "../http/errors";
import { describeZodError } from "../http/fields";
import { clientIp } from "../http/rate-limits";
import { routedPath } from "../http/router";
import { busyError } from "../http/service-busy";
import { dashboardApiPath } from "./mode";

/**
 * The dashboard is a client of the admin JSON API: every page reads and
 * writes through it (in process, no network hop), so the browser and other
 * tools see the same validation and the same errors.
 */
const admin = new Hono<AdminEnv>({ router: new RegExpRouter(), getPath: routedPath }).route("/admin/v1", adminRoutes);
admin.onError((err, c) => {
	// D1 busy or down: thrown on to the page's own handler, which answers the page itself with 503 (routes.tsx).
	if (busyError(err)) throw err;
	if (err instanceof ApiError) return c.json(errorBody(err.errorcode, err.message, err.extra), err.status);
	if (err instanceof z.ZodError) return c.json(errorBody("validation_failed", describeZodError(err).message), 400);
	console.error("dashboard: admin API error", err);
	return c.json(errorBody("internal_error", "Internal error."), 500);
});

export interface ApiResult<T> {
	ok: boolean;
	status: number;
	body: T;
	/** The error message when !ok. */
	error: string;
}

export type Api = <T = any>(method: string, path: string, body?: unknown) => Promise<ApiResult<T>>;

/**
 * The admin API as the signed-in person: the superuser, or a member held to
 * their role in each app (admin/rights.ts). The person is handed over in
 * process (admin/principal.ts, handingOff), so no secret travels and no HTTP
 * client can claim to be the dashboard.
 */
export function apiFor(c: Context<any>, personid: string | null): Api {
	const person = { personid, ip: clientIp(c.req.raw), origin: new URL(c.req.url).origin };
	return async (method, path, body) => {
		// A file (an uploaded logo) goes as its bytes with its own type; anything else as JSON.
		const file = body instanceof Blob ? body : null;
		const request = new Request(`http://dashboard.internal/admin/v1${dashboardApiPath(c, path)}`, {
			method,
			headers: { "content-type": file ? file.type || "application/octet-stream" : "application/json" },
			body: file ?? (body === undefined ? undefined : JSON.stringify(body)),
		});
		// The person travels with this dispatch only (admin/principal.ts), into the admin API's context variables.
		const res = await admin.fetch(request, handingOff(c.env, { person }), c.executionCtx);
		const json = (await res.json()) as any;
		return { ok: res.ok, status: res.status, body: json, error: res.ok ? "" : String(json?.message ?? `HTTP ${res.status}`) };
	};
}

/** Reads a result or throws it as the page's error (404s become the not-found page, 403s the refused page). */
export function must<T>(result: ApiResult<T>): T {
	if (!result.ok) throw new ApiError(result.status as 400, result.status === 403 ? "forbidden" : "not_found", result.error);
	return result.body;
}
