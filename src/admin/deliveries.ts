import { Hono } from "hono";
import { z } from "zod";
import { findApp } from "../db/apps";
import { markNotEnqueued, resetForRedelivery } from "../db/outbox-events";
import { nowIso } from "../domain/dates";
import { ApiError } from "../http/errors";
import { getDelivery, listDeliveries } from "../outbox/deliveries";
import { enqueueOutboxEvents } from "../outbox/events";
import { webhookBreakerOf } from "./breakers";
import { type AdminEnv, auditEntry } from "./principal";

/**
 * Delivery log of an app's webhooks and emails (admin API, under /admin/v1;
 * mounted on adminRoutes, so its bearer-token check applies).
 */
export const deliveryRoutes = new Hono<AdminEnv>();

const limitSchema = z.coerce.number().int().min(1).max(200).default(50);

const deliveryNotFound = () => new ApiError(404, "delivery_not_found", "No outbox event with that id in this app.");

async function requireApp(db: D1Database, appid: string) {
	const app = await findApp(db, appid);
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return app;
}

/** Recent events, newest first, each with its status, attempt count and latest attempt. */
deliveryRoutes.get("/apps/:appid/deliveries", async (c) => {
	const appid = c.req.param("appid");
	const limit = limitSchema.safeParse(c.req.query("limit") ?? undefined);
	if (!limit.success) throw new ApiError(400, "validation_failed", "limit must be an integer from 1 to 200.");
	const app = await requireApp(c.env.DB, appid);
	const [deliveries, webhookbreaker] = await Promise.all([
		listDeliveries(c.env.DB, appid, limit.data, c.req.query("cursor")?.slice(0, 200) || undefined),
		webhookBreakerOf(c.env.DB, appid, app.webhookurl),
	]);
	const nextcursor = deliveries.length === limit.data ? deliveries[deliveries.length - 1]!.eventid : null;
	return c.json({ deliveries, nextcursor, webhookbreaker });
});

/** One event with its payload and every attempt. */
deliveryRoutes.get("/apps/:appid/deliveries/:eventid", async (c) => {
	const delivery = await getDelivery(c.env.DB, c.req.param("appid"), c.req.param("eventid"));
	if (!delivery) throw deliveryNotFound();
	return c.json(delivery);
});

/**
 * Sends the event again, also when it was delivered or dead-lettered. The
 * receiver sees the same `webhook-id` and may dedupe on it.
 */
deliveryRoutes.post("/apps/:appid/deliveries/:eventid/redeliver", async (c) => {
	const appid = c.req.param("appid");
	const eventid = c.req.param("eventid");
	const audit = auditEntry(c, appid, { action: "delivery.redeliver", targetType: "delivery", targetId: eventid });
	if (!(await resetForRedelivery(c.env.DB, appid, eventid, nowIso(), audit))) throw deliveryNotFound();
	let enqueued = true;
	try {
		await enqueueOutboxEvents(c.env, [eventid]);
	} catch (err) {
		// The outbox sweep sends it once the queue takes messages again.
		console.error(JSON.stringify({ msg: "redeliver: enqueue failed, left to the outbox sweep", eventid, error: String(err) }));
		await markNotEnqueued(c.env.DB, eventid);
		enqueued = false;
	}
	return c.json({ eventid, enqueued }, 202);
});
