import { Hono } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { findAdminToken } from "../db/admin-tokens";
import { type App, findTestApp, insertApp, listApps, saveTestKeys, testAppid, updateApp } from "../db/apps";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";
import { newApiKey, newAppId, newPrivateKey, newTestApiKey, newTestPrivateKey, newWebhookSecret } from "../domain/ids";
import { countAdminFailure, refuseThrottledAdmin } from "../http/admin-throttle";
import { refuseInsecureAdminToken } from "../http/admin-token";
import { forgetCachedApp, forgetCachedKey } from "../http/auth";
import { ApiError, badRequest } from "../http/errors";
import { clientIp } from "../http/rate-limits";
import { routedPath } from "../http/router";
import { auditRoutes } from "./audit";
import { body } from "./body";
import { breakerRoutes } from "./breakers";
import { campaignRoutes } from "./campaigns";
import { deliveryRoutes } from "./deliveries";
import { requireApp } from "./guard";
import { importRoutes } from "./import";
import { leaderboardRoutes } from "./leaderboard";
import { ledgerRestoreRoutes } from "./ledger-restore";
import { dropReplacedLogo, logoRoutes } from "./logos";
import { memberRoutes } from "./members";
import { messageRoutes } from "./messages";
import { pageOf } from "./paging";
import { type AdminEnv, auditEntry, authOf, clientIpHash, diff, handoffOf } from "./principal";
import { privacyRoutes } from "./privacy";
import { rewardRoutes } from "./rewards";
import { authorizeMember, authorizeToken } from "./rights";
import { createAppSchema, testKeysSchema, updateAppSchema } from "./schemas";
import { shardRoutes } from "./shards";
import { statsRoutes } from "./stats";
import { applyStripeSettings, checkStripeSettings, stripeRoutes, stripeView } from "./stripe";
import { testDataRoutes } from "./test-data";
import { refuseModeOutsideApps, testModeSwitch } from "./test-mode";
import { createTokenSchema, registerTokenRoutes, tokenRoutes } from "./tokens";
import { userRoutes } from "./users";
import { requireAllowedWebhookUrl } from "./webhook-policy";

/**
 * The admin API (the dashboard's back end), under /admin/v1, authenticated by
 * `Authorization: Bearer <ADMIN_TOKEN>` (the superuser) or an app-scoped
 * token with a role (tokens.ts, rights.ts).
 */
export const adminRoutes = new Hono<AdminEnv>();

adminRoutes.use("*", async (c, next) => {
	// A deployment with a guessable token serves nothing; a client over its failed sign-ins is refused before the compare.
	refuseInsecureAdminToken(c.env);
	const handoff = handoffOf(c.env);
	c.set("person", handoff.person);
	// A ?mode=test request re-dispatched to the twin's path was authenticated on the live app's path (test-mode.ts).
	if (handoff.auth) {
		c.set("auth", handoff.auth);
		c.set("twin", true);
		return next();
	}
	const path = c.req.path.replace(/^\/admin\/v1(?=\/)/, "");
	// The dashboard's own in-process requests: it checked the session already (dashboard/session.ts).
	const person = handoff.person;
	if (person) {
		const iphash = await clientIpHash(c.env, person.ip);
		if (person.personid === null) c.set("auth", { actor: { type: "superuser", id: null, name: "superuser", iphash } });
		else c.set("auth", await authorizeMember(c.env.DB, person.personid, c.req.method, path, iphash));
		return next();
	}
	const ip = clientIp(c.req.raw);
	refuseThrottledAdmin(ip);
	const token = c.env.ADMIN_TOKEN;
	const presented = c.req.header("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1] ?? "";
	if (token && constantTimeEqual(presented, token)) {
		c.set("auth", { actor: { type: "superuser", id: null, name: "superuser", iphash: await clientIpHash(c.env, ip) } });
		return next();
	}
	// An app-scoped token (tokens.ts): found by its hash, then held to its app and its role's rights (rights.ts).
	const scoped = presented.startsWith("adm_") ? await findAdminToken(c.env.DB, await sha256Hex(presented)) : null;
	if (!scoped) {
		// A stale token retried counts once (admin-throttle.ts): the operator's valid token from that address keeps working.
		await countAdminFailure(c.env, { ip, credential: presented });
		throw new ApiError(401, "unauthorized", "A valid admin bearer token is required.");
	}
	authorizeToken(scoped, c.req.method, path);
	const actor = { type: "token" as const, id: scoped.tokenid, name: scoped.name, iphash: await clientIpHash(c.env, ip) };
	c.set("auth", { actor, role: scoped.role });
	await next();
});

// ?mode=test: served by these same routes on the app's test twin (test-mode.ts); a twin's appid alone is a 404.
// Hono copies routes when mounted, so the copy that serves the twin is made on first use, after every route exists.
let twinRoutes: Hono<AdminEnv> | undefined;
function onTwinRoutes(): Hono<AdminEnv> {
	if (!twinRoutes) {
		twinRoutes = new Hono<AdminEnv>({ router: new RegExpRouter(), getPath: routedPath }).route("/", adminRoutes);
		// Errors go back to the caller's app, which answers them as for any admin request.
		twinRoutes.onError((err) => {
			throw err;
		});
	}
	return twinRoutes;
}
const onTwin = testModeSwitch((request, env, ctx) => onTwinRoutes().fetch(request, env, ctx));
adminRoutes.use("*", refuseModeOutsideApps);
adminRoutes.use("/apps/:appid", onTwin);
adminRoutes.use("/apps/:appid/*", onTwin);

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
		logourl: app.logourl,
		accentcolor: app.accentcolor,
		webhooksecret: app.webhookSecret,
		defaultcampaignid: app.defaultCampaignId,
		requirepasskeys: app.requirePasskeys,
		createdat: app.createdAt,
		updatedat: app.updatedAt,
	};
}

/** A secret's change, recorded without its values. */
const SECRET_CHANGED = (field: string) => ({ [field]: { before: "(secret)", after: "(secret)" } });

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
	// The test pair too (docs/test-mode.md): shown once, like the private key.
	const test = { apikey: newTestApiKey(), privatekey: newTestPrivateKey() };
	const testKeys = { apikey: test.apikey, privatekeyHash: await sha256Hex(test.privatekey) };
	await insertApp(c.env.DB, { ...created, ...fields, privatekeyHash: await sha256Hex(privatekey) }, testKeys, audit);
	forgetCachedKey(created.apikey);
	forgetCachedKey(test.apikey);
	return c.json(
		{
			appid: created.appid,
			apikey: created.apikey,
			privatekey,
			webhooksecret: created.webhookSecret,
			testapikey: test.apikey,
			testprivatekey: test.privatekey,
		},
		201,
	);
});

adminRoutes.get("/apps", async (c) => {
	const { limit, cursor } = pageOf(c);
	const apps = await listApps(c.env.DB, limit, cursor);
	return c.json({ apps: apps.map(appView), nextcursor: apps.length === limit ? apps[apps.length - 1]!.appid : null });
});

adminRoutes.get("/apps/:appid", async (c) => {
	const view = appView(await requireApp(c.env.DB, c.req.param("appid")));
	// The webhook secret signs what the app trusts: only an owner (or the superuser) reads it.
	const { role } = authOf(c);
	const [stripe, teststripe, twin] = await Promise.all([
		stripeView(c, view.appid),
		stripeView(c, testAppid(view.appid)),
		findTestApp(c.env.DB, view.appid),
	]);
	// The test apikey is public like the live one (docs/test-mode.md); null: the app has no test keys yet.
	const shown = { ...view, testapikey: twin?.apikey ?? null, stripe, teststripe };
	return c.json(role === undefined || role === "owner" ? shown : { ...shown, webhooksecret: null });
});

adminRoutes.patch("/apps/:appid", async (c) => {
	const input = await body(c.req.raw, updateAppSchema);
	requireAllowedWebhookUrl(c, input.webhookurl);
	const appid = c.req.param("appid");
	const { defaultcampaignid, requirepasskeys, stripe, teststripe, ...fields } = input;
	checkStripeSettings(c, stripe);
	checkStripeSettings(c, teststripe);
	const before = await requireApp(c.env.DB, appid);
	// The test connection belongs to the test twin (docs/test-mode.md), which the test keys create.
	if (teststripe !== undefined && !(await findTestApp(c.env.DB, appid))) {
		throw badRequest("teststripe: the app has no test keys yet; create them with POST /admin/v1/apps/{appid}/testkeys.", {
			fields: ["teststripe"],
		});
	}
	const audit = auditEntry(c, appid, {
		action: "app.update",
		targetType: "app",
		targetId: appid,
		changes: diff(appView(before), { ...fields, defaultcampaignid, requirepasskeys }),
	});
	// A call that only connects Stripe changes no column of the app (and records no empty app.update).
	const onlyStripe = (stripe !== undefined || teststripe !== undefined) && Object.keys(audit.changes).length === 0;
	if (
		!onlyStripe &&
		!(await updateApp(c.env.DB, appid, { ...fields, defaultCampaignId: defaultcampaignid, requirePasskeys: requirepasskeys }, audit))
	) {
		const app = await requireApp(c.env.DB, appid);
		if (defaultcampaignid !== undefined) {
			throw badRequest(`defaultcampaignid: ${defaultcampaignid} is not a campaign of app ${app.appid}.`, { fields: ["defaultcampaignid"] });
		}
		throw new Error("app update changed nothing for an unexplained reason");
	}
	if (stripe !== undefined) await applyStripeSettings(c, appid, stripe);
	if (teststripe !== undefined) await applyStripeSettings(c, testAppid(appid), teststripe);
	// A logo URL set over an uploaded logo: the uploaded file goes (logos.ts).
	if (fields.logourl !== undefined) await dropReplacedLogo(c.env, before, fields.logourl);
	forgetCachedApp(appid);
	forgetCachedApp(testAppid(appid));
	const stripeViews = { stripe: await stripeView(c, appid), teststripe: await stripeView(c, testAppid(appid)) };
	return c.json({ ...appView(await requireApp(c.env.DB, appid)), ...stripeViews });
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

/**
 * Creates the app's test key pair, or rotates it (the old test keys stop
 * working); answered once. An app that has test keys keeps them unless the
 * body says `{"rotate": true}`: a second call made by following the docs
 * must not silently break wherever the current pair is configured (issue 51).
 */
adminRoutes.post("/apps/:appid/testkeys", async (c) => {
	const appid = c.req.param("appid");
	const { rotate } = (await c.req.raw.clone().text()).trim() === "" ? { rotate: false } : await body(c.req.raw, testKeysSchema);
	const before = await findTestApp(c.env.DB, appid);
	if (before && !rotate) {
		throw new ApiError(
			409,
			"testkeys_exist",
			`The app has test keys already (${before.apikey}). A new pair stops that one working wherever it is configured; nothing was changed. Send {"rotate": true} to replace it.`,
			{ testapikey: before.apikey },
		);
	}
	const testapikey = newTestApiKey();
	const testprivatekey = newTestPrivateKey();
	const audit = auditEntry(c, appid, {
		action: "app.rotate_testkeys",
		targetType: "app",
		targetId: appid,
		changes: { ...diff({ testapikey: before?.apikey ?? null }, { testapikey }), ...SECRET_CHANGED("testprivatekey") },
	});
	if (!(await saveTestKeys(c.env.DB, appid, { apikey: testapikey, privatekeyHash: await sha256Hex(testprivatekey) }, audit))) {
		throw new ApiError(404, "app_not_found", "No app with that appid.");
	}
	forgetCachedApp(testAppid(appid));
	forgetCachedKey(testapikey);
	return c.json({ appid, testapikey, testprivatekey });
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
	forgetCachedApp(testAppid(appid));
	return c.json({ appid, webhooksecret });
});

adminRoutes.route("/", campaignRoutes);
adminRoutes.route("/", messageRoutes);
adminRoutes.route("/", deliveryRoutes);
adminRoutes.route("/", breakerRoutes);
adminRoutes.route("/", userRoutes);
adminRoutes.route("/", rewardRoutes);
adminRoutes.route("/", statsRoutes);
adminRoutes.route("/", leaderboardRoutes);
adminRoutes.route("/", privacyRoutes);
adminRoutes.route("/", ledgerRestoreRoutes);
adminRoutes.route("/", shardRoutes);
adminRoutes.route("/", importRoutes);
registerTokenRoutes((request) => body(request, createTokenSchema));
adminRoutes.route("/", tokenRoutes);
adminRoutes.route("/", memberRoutes);
adminRoutes.route("/", auditRoutes);
adminRoutes.route("/", stripeRoutes);
adminRoutes.route("/", testDataRoutes);
adminRoutes.route("/", logoRoutes);
