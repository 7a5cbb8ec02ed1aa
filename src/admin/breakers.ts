import { Hono } from "hono";
import { findApp } from "../db/apps";
import { readBreaker, resetBreaker } from "../db/breakers";
import { ApiError } from "../http/errors";
import { breakerView, stateFor } from "../outbox/breaker";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * The circuit breaker of an app's webhook endpoint (admin API, under
 * /admin/v1; mounted on adminRoutes, so its bearer-token check applies).
 */
export const breakerRoutes = new Hono<AdminEnv>();

/** The breaker as it applies to the app's current webhook URL (a state of an older URL is closed). */
export async function webhookBreakerOf(db: D1Database, appid: string, webhookurl: string | null) {
	const stored = await readBreaker(db, appid);
	return breakerView(webhookurl && stored ? stateFor(stored, webhookurl) : null, Date.now());
}

breakerRoutes.get("/apps/:appid/webhook-breaker", async (c) => {
	const app = await findApp(c.env.DB, c.req.param("appid"));
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return c.json(await webhookBreakerOf(c.env.DB, app.appid, app.webhookurl));
});

/** Closes the breaker at once (the owner fixed the endpoint and does not want to wait for the probe). */
breakerRoutes.post("/apps/:appid/webhook-breaker/reset", async (c) => {
	const app = await findApp(c.env.DB, c.req.param("appid"));
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	await resetBreaker(
		c.env.DB,
		app.appid,
		auditEntry(c, app.appid, { action: "webhook_breaker.reset", targetType: "app", targetId: app.appid }),
	);
	return c.json(await webhookBreakerOf(c.env.DB, app.appid, app.webhookurl));
});
