import { Hono } from "hono";
import type { z } from "zod";
import { type App, findApp, insertApp, listApps, updateApp } from "../db/apps";
import {
	addCoupons,
	type Campaign,
	countFreeCoupons,
	getCampaign,
	getCampaignWithDetails,
	insertCampaign,
	listCampaigns,
	updateCampaign,
} from "../db/campaigns";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";
import { nowIso } from "../domain/dates";
import { newApiKey, newAppId, newPrivateKey, newWebhookSecret } from "../domain/ids";
import { forgetCachedApp } from "../http/auth";
import { ApiError, campaignNotFound } from "../http/errors";
import { readJsonObject } from "../http/json-body";
import { deliveryRoutes } from "./deliveries";
import { addCouponsSchema, createAppSchema, createCampaignSchema, updateAppSchema, updateCampaignSchema } from "./schemas";

/**
 * The admin API (the dashboard's back end), under /admin/v1, authenticated by
 * `Authorization: Bearer <ADMIN_TOKEN>`.
 */
export const adminRoutes = new Hono<{ Bindings: Env }>();

adminRoutes.use("*", async (c, next) => {
	const token = c.env.ADMIN_TOKEN;
	const presented = c.req.header("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1] ?? "";
	if (!token || !constantTimeEqual(presented, token)) {
		throw new ApiError(401, "unauthorized", "A valid admin bearer token is required.");
	}
	await next();
});

async function body<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
	return schema.parse(await readJsonObject(request));
}

function appView(app: App) {
	return {
		appid: app.appid,
		name: app.name,
		apikey: app.apikey,
		landingurl: app.landingurl,
		webhookurl: app.webhookurl,
		emailsender: app.emailsender,
		frameorigin: app.frameorigin,
		webhooksecret: app.webhookSecret,
		defaultcampaignid: app.defaultCampaignId,
		createdat: app.createdAt,
		updatedat: app.updatedAt,
	};
}

async function requireApp(db: D1Database, appid: string): Promise<App> {
	const app = await findApp(db, appid);
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return app;
}

function requireCampaignId(raw: string): number {
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	return Number(raw);
}

adminRoutes.post("/apps", async (c) => {
	const input = await body(c.req.raw, createAppSchema);
	const privatekey = newPrivateKey();
	const created = {
		appid: newAppId(),
		apikey: newApiKey(),
		webhookSecret: newWebhookSecret(),
	};
	await insertApp(c.env.DB, {
		...created,
		name: input.name,
		privatekeyHash: await sha256Hex(privatekey),
		landingurl: input.landingurl ?? null,
		webhookurl: input.webhookurl ?? null,
		emailsender: input.emailsender ?? null,
	});
	return c.json({ appid: created.appid, apikey: created.apikey, privatekey, webhooksecret: created.webhookSecret }, 201);
});

adminRoutes.get("/apps", async (c) => c.json({ apps: (await listApps(c.env.DB)).map(appView) }));

adminRoutes.get("/apps/:appid", async (c) => c.json(appView(await requireApp(c.env.DB, c.req.param("appid")))));

adminRoutes.patch("/apps/:appid", async (c) => {
	const input = await body(c.req.raw, updateAppSchema);
	const appid = c.req.param("appid");
	if (!(await updateApp(c.env.DB, appid, input))) throw new ApiError(404, "app_not_found", "No app with that appid.");
	forgetCachedApp(appid);
	return c.json(appView(await requireApp(c.env.DB, appid)));
});

/** Issues a new private key; the old one stops working (other isolates: within the auth cache TTL). */
adminRoutes.post("/apps/:appid/rotate-privatekey", async (c) => {
	const appid = c.req.param("appid");
	const privatekey = newPrivateKey();
	if (!(await updateApp(c.env.DB, appid, { privatekeyHash: await sha256Hex(privatekey) }))) {
		throw new ApiError(404, "app_not_found", "No app with that appid.");
	}
	forgetCachedApp(appid);
	return c.json({ appid, privatekey });
});

adminRoutes.post("/apps/:appid/rotate-webhooksecret", async (c) => {
	const appid = c.req.param("appid");
	const webhooksecret = newWebhookSecret();
	if (!(await updateApp(c.env.DB, appid, { webhookSecret: webhooksecret }))) {
		throw new ApiError(404, "app_not_found", "No app with that appid.");
	}
	forgetCachedApp(appid);
	return c.json({ appid, webhooksecret });
});

function campaignView(campaign: Campaign) {
	const { createdAt, updatedAt, autoapprove, ...rest } = campaign;
	return { ...rest, autoapprove, createdat: createdAt, updatedat: updatedAt };
}

adminRoutes.post("/apps/:appid/campaigns", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const { rewardrules, socialactions, campaignstartdate, ...fields } = await body(c.req.raw, createCampaignSchema);
	const campaignid = await insertCampaign(
		c.env.DB,
		app.appid,
		{ ...fields, campaignstartdate: campaignstartdate ?? nowIso() },
		rewardrules,
		socialactions,
	);
	forgetCachedApp(app.appid);
	return c.json({ campaignid }, 201);
});

adminRoutes.get("/apps/:appid/campaigns", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	return c.json({ campaigns: (await listCampaigns(c.env.DB, app.appid)).map(campaignView) });
});

adminRoutes.get("/apps/:appid/campaigns/:campaignid", async (c) => {
	const campaign = await getCampaignWithDetails(c.env.DB, c.req.param("appid"), requireCampaignId(c.req.param("campaignid")));
	if (!campaign) throw campaignNotFound();
	const couponsavailable = await countFreeCoupons(c.env.DB, campaign.campaignid);
	return c.json({ ...campaignView(campaign), couponsavailable });
});

adminRoutes.patch("/apps/:appid/campaigns/:campaignid", async (c) => {
	const appid = c.req.param("appid");
	const campaignid = requireCampaignId(c.req.param("campaignid"));
	const { rewardrules, socialactions, ...fields } = await body(c.req.raw, updateCampaignSchema);
	if (!(await updateCampaign(c.env.DB, appid, campaignid, fields, rewardrules, socialactions))) throw campaignNotFound();
	const campaign = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	return c.json(campaign ? campaignView(campaign) : null);
});

adminRoutes.post("/apps/:appid/campaigns/:campaignid/coupons", async (c) => {
	const appid = c.req.param("appid");
	const campaign = await getCampaign(c.env.DB, appid, requireCampaignId(c.req.param("campaignid")));
	if (!campaign) throw campaignNotFound();
	const { coupons } = await body(c.req.raw, addCouponsSchema);
	const added = await addCoupons(c.env.DB, campaign.campaignid, coupons);
	return c.json({ added, skipped: coupons.length - added, couponsavailable: await countFreeCoupons(c.env.DB, campaign.campaignid) }, 201);
});
adminRoutes.route("/", deliveryRoutes);
