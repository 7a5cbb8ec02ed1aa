import { type Context, Hono } from "hono";
import { z } from "zod";
import { findAdminToken } from "../db/admin-tokens";
import { type App, findApp, insertApp, listApps, updateApp } from "../db/apps";
import { listCampaignsWithDetails } from "../db/campaign-list";
import {
	addCoupons,
	type Campaign,
	countFreeCoupons,
	getCampaign,
	getCampaignWithDetails,
	insertCampaign,
	updateCampaign,
} from "../db/campaigns";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";
import { nowIso } from "../domain/dates";
import { newApiKey, newAppId, newPrivateKey, newWebhookSecret } from "../domain/ids";
import { countAdminFailure, refuseThrottledAdmin } from "../http/admin-throttle";
import { refuseInsecureAdminToken } from "../http/admin-token";
import { forgetCachedApp, forgetCachedKey } from "../http/auth";
import { ApiError, badRequest, campaignNotFound } from "../http/errors";
import { clientIp } from "../http/rate-limits";
import { auditRoutes } from "./audit";
import { body } from "./body";
import { breakerRoutes } from "./breakers";
import { deliveryRoutes } from "./deliveries";
import { importRoutes } from "./import";
import { memberRoutes } from "./members";
import { auditEntry, authOf, clientIpHash, diff, settle, signedInPersonOf } from "./principal";
import { privacyRoutes } from "./privacy";
import { rewardRoutes } from "./rewards";
import { authorizeMember, authorizeToken } from "./rights";
import { addCouponsSchema, createAppSchema, createCampaignSchema, updateAppSchema, updateCampaignSchema } from "./schemas";
import { statsRoutes } from "./stats";
import { applyStripeSettings, checkStripeSettings, stripeRoutes, stripeView } from "./stripe";
import { createTokenSchema, registerTokenRoutes, tokenRoutes } from "./tokens";
import { userRoutes } from "./users";
import { requireAllowedWebhookUrl } from "./webhook-policy";

/**
 * The admin API (the dashboard's back end), under /admin/v1, authenticated by
 * `Authorization: Bearer <ADMIN_TOKEN>` (the superuser) or an app-scoped
 * token with a role (tokens.ts, rights.ts).
 */
export const adminRoutes = new Hono<{ Bindings: Env }>();

adminRoutes.use("*", async (c, next) => {
	// A deployment with a guessable token serves nothing; a client over its failed sign-ins is refused before the compare.
	refuseInsecureAdminToken(c.env);
	const path = c.req.path.replace(/^\/admin\/v1(?=\/)/, "");
	// The dashboard's own in-process requests: it checked the session already (dashboard/session.ts).
	const person = signedInPersonOf(c.req.raw);
	if (person) {
		const iphash = await clientIpHash(c.env, person.ip);
		if (person.personid === null) settle(c.req.raw, { actor: { type: "superuser", id: null, name: "superuser", iphash } });
		else settle(c.req.raw, await authorizeMember(c.env.DB, person.personid, c.req.method, path, iphash));
		return next();
	}
	const ip = clientIp(c.req.raw);
	refuseThrottledAdmin(ip);
	const token = c.env.ADMIN_TOKEN;
	const presented = c.req.header("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1] ?? "";
	if (token && constantTimeEqual(presented, token)) {
		settle(c.req.raw, { actor: { type: "superuser", id: null, name: "superuser", iphash: await clientIpHash(c.env, ip) } });
		return next();
	}
	// An app-scoped token (tokens.ts): found by its hash, then held to its app and its role's rights (rights.ts).
	const scoped = presented.startsWith("adm_") ? await findAdminToken(c.env.DB, await sha256Hex(presented)) : null;
	if (!scoped) {
		await countAdminFailure(c.env, ip);
		throw new ApiError(401, "unauthorized", "A valid admin bearer token is required.");
	}
	authorizeToken(scoped, c.req.method, path);
	const actor = { type: "token" as const, id: scoped.tokenid, name: scoped.name, iphash: await clientIpHash(c.env, ip) };
	settle(c.req.raw, { actor, role: scoped.role });
	await next();
});

function appView(app: App) {
	return {
		appid: app.appid,
		name: app.name,
		apikey: app.apikey,
		landingurl: app.landingurl,
		webhookurl: app.webhookurl,
		emailsender: app.emailsender,
		frameorigin: app.frameorigin,
		timezone: app.timezone,
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

/** A secret's change, recorded without its values. */
const SECRET_CHANGED = (field: string) => ({ [field]: { before: "(secret)", after: "(secret)" } });

function requireCampaignId(raw: string): number {
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	return Number(raw);
}

adminRoutes.post("/apps", async (c) => {
	const input = await body(c.req.raw, createAppSchema);
	requireAllowedWebhookUrl(c, input.webhookurl);
	const privatekey = newPrivateKey();
	const created = {
		appid: newAppId(),
		apikey: newApiKey(),
		webhookSecret: newWebhookSecret(),
	};
	const fields = {
		name: input.name,
		landingurl: input.landingurl ?? null,
		webhookurl: input.webhookurl ?? null,
		emailsender: input.emailsender ?? null,
	};
	const audit = auditEntry(c, created.appid, {
		action: "app.create",
		targetType: "app",
		targetId: created.appid,
		changes: diff({}, { ...fields, apikey: created.apikey }),
	});
	await insertApp(c.env.DB, { ...created, ...fields, privatekeyHash: await sha256Hex(privatekey) }, audit);
	forgetCachedKey(created.apikey);
	return c.json({ appid: created.appid, apikey: created.apikey, privatekey, webhooksecret: created.webhookSecret }, 201);
});

/** Admin lists are paged: `limit` (1 to 200, default 50) and `cursor` (the previous page's `nextcursor`). */
const pageQuery = z.object({
	limit: z.coerce.number().int().min(1).max(200).default(50),
	cursor: z.string().max(200).optional(),
});

function pageOf(c: Context<{ Bindings: Env }>) {
	return pageQuery.parse({ limit: c.req.query("limit") ?? undefined, cursor: c.req.query("cursor") || undefined });
}

adminRoutes.get("/apps", async (c) => {
	const { limit, cursor } = pageOf(c);
	const apps = await listApps(c.env.DB, limit, cursor);
	return c.json({ apps: apps.map(appView), nextcursor: apps.length === limit ? apps[apps.length - 1]!.appid : null });
});

adminRoutes.get("/apps/:appid", async (c) => {
	const view = appView(await requireApp(c.env.DB, c.req.param("appid")));
	// The webhook secret signs what the app trusts: only an owner (or the superuser) reads it.
	const { role } = authOf(c);
	const stripe = await stripeView(c, view.appid);
	return c.json(role === undefined || role === "owner" ? { ...view, stripe } : { ...view, webhooksecret: null, stripe });
});

adminRoutes.patch("/apps/:appid", async (c) => {
	const input = await body(c.req.raw, updateAppSchema);
	requireAllowedWebhookUrl(c, input.webhookurl);
	const appid = c.req.param("appid");
	const { defaultcampaignid, stripe, ...fields } = input;
	checkStripeSettings(c, stripe);
	const before = await requireApp(c.env.DB, appid);
	const audit = auditEntry(c, appid, {
		action: "app.update",
		targetType: "app",
		targetId: appid,
		changes: diff(appView(before), { ...fields, defaultcampaignid }),
	});
	// A call that only connects Stripe changes no column of the app (and records no empty app.update).
	const onlyStripe = stripe !== undefined && Object.keys(audit.changes).length === 0;
	if (!onlyStripe && !(await updateApp(c.env.DB, appid, { ...fields, defaultCampaignId: defaultcampaignid }, audit))) {
		const app = await requireApp(c.env.DB, appid);
		if (defaultcampaignid !== undefined) {
			throw badRequest(`defaultcampaignid: ${defaultcampaignid} is not a campaign of app ${app.appid}.`, { fields: ["defaultcampaignid"] });
		}
		throw new Error("app update changed nothing for an unexplained reason");
	}
	if (stripe !== undefined) await applyStripeSettings(c, appid, stripe);
	forgetCachedApp(appid);
	return c.json({ ...appView(await requireApp(c.env.DB, appid)), stripe: await stripeView(c, appid) });
});

/** Issues a new private key; the old one stops working (other isolates: within the auth cache TTL). */
adminRoutes.post("/apps/:appid/rotate-privatekey", async (c) => {
	const appid = c.req.param("appid");
	const privatekey = newPrivateKey();
	const audit = auditEntry(c, appid, {
		action: "app.rotate_privatekey",
		targetType: "app",
		targetId: appid,
		changes: SECRET_CHANGED("privatekey"),
	});
	if (!(await updateApp(c.env.DB, appid, { privatekeyHash: await sha256Hex(privatekey) }, audit))) {
		throw new ApiError(404, "app_not_found", "No app with that appid.");
	}
	forgetCachedApp(appid);
	return c.json({ appid, privatekey });
});

adminRoutes.post("/apps/:appid/rotate-webhooksecret", async (c) => {
	const appid = c.req.param("appid");
	const webhooksecret = newWebhookSecret();
	const audit = auditEntry(c, appid, {
		action: "app.rotate_webhooksecret",
		targetType: "app",
		targetId: appid,
		changes: SECRET_CHANGED("webhooksecret"),
	});
	if (!(await updateApp(c.env.DB, appid, { webhookSecret: webhooksecret }, audit))) {
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
	const values = { ...fields, campaignstartdate: campaignstartdate ?? nowIso() };
	// The new campaign's id is read inside the batch that creates it (db/campaigns.ts).
	const audit = auditEntry(c, app.appid, {
		action: "campaign.create",
		targetType: "campaign",
		targetId: null,
		changes: diff({}, { ...values, rewardrules, socialactions }),
	});
	const campaignid = await insertCampaign(c.env.DB, app.appid, values, rewardrules, socialactions, audit);
	forgetCachedApp(app.appid);
	return c.json({ campaignid }, 201);
});

adminRoutes.get("/apps/:appid/campaigns", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const { limit, cursor } = pageOf(c);
	const campaigns = await listCampaignsWithDetails(c.env.DB, app.appid, limit, /^\d{1,15}$/.test(cursor ?? "") ? Number(cursor) : 0);
	return c.json({
		campaigns: campaigns.map(campaignView),
		nextcursor: campaigns.length === limit ? String(campaigns[campaigns.length - 1]!.campaignid) : null,
	});
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
	const input = await body(c.req.raw, updateCampaignSchema);
	const { rewardrules, socialactions, ...fields } = input;
	const before = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	if (!before) throw campaignNotFound();
	const audit = auditEntry(c, appid, {
		action: "campaign.update",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: diff(campaignView(before), input),
	});
	const updated = await updateCampaign(c.env.DB, appid, campaignid, fields, rewardrules, socialactions, audit);
	if (!updated.ok && updated.reason === "campaign_not_found") throw campaignNotFound();
	if (!updated.ok) throw badRequest(`rewardrules: no active rule ${updated.ruleid} in this campaign.`, { fields: ["rewardrules"] });
	const campaign = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	return c.json(campaign ? campaignView(campaign) : null);
});

adminRoutes.post("/apps/:appid/campaigns/:campaignid/coupons", async (c) => {
	const appid = c.req.param("appid");
	const campaign = await getCampaign(c.env.DB, appid, requireCampaignId(c.req.param("campaignid")));
	if (!campaign) throw campaignNotFound();
	const { coupons } = await body(c.req.raw, addCouponsSchema);
	const audit = auditEntry(c, appid, {
		action: "campaign.coupons_add",
		targetType: "campaign",
		targetId: String(campaign.campaignid),
		changes: { couponssubmitted: { before: null, after: coupons.length } },
	});
	const added = await addCoupons(c.env.DB, campaign.campaignid, coupons, audit);
	return c.json({ added, skipped: coupons.length - added, couponsavailable: await countFreeCoupons(c.env.DB, campaign.campaignid) }, 201);
});
adminRoutes.route("/", deliveryRoutes);
adminRoutes.route("/", breakerRoutes);
adminRoutes.route("/", userRoutes);
adminRoutes.route("/", rewardRoutes);
adminRoutes.route("/", statsRoutes);
adminRoutes.route("/", privacyRoutes);
adminRoutes.route("/", importRoutes);
registerTokenRoutes((request) => body(request, createTokenSchema));
adminRoutes.route("/", tokenRoutes);
adminRoutes.route("/", memberRoutes);
adminRoutes.route("/", auditRoutes);
adminRoutes.route("/", stripeRoutes);
