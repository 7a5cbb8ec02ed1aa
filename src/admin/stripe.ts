import { Hono } from "hono";
import type { z } from "zod";
import { recordAudit } from "../db/audit";
import { deleteStripeConfig, findStripeConfig, saveStripeConfig, stripeEventCounts } from "../db/stripe";
import { recentStripeCases } from "../db/stripe-identity";
import { findUser } from "../db/users";
import { publicOrigin } from "../domain/public-origin";
import { seal } from "../domain/secret-box";
import { webhookUrlPolicy, webhookUrlProblem } from "../domain/webhook-url";
import { ApiError, userNotFound } from "../http/errors";
import { stripeWebhookUrl } from "../integrations/stripe/connection";
import { ledgerFor } from "../ledger/stub";
import { type AdminContext, type AdminEnv, auditEntry, callerOrigin } from "./principal";
import type { stripeSettingsSchema } from "./schemas";

/**
 * An app's Stripe connection through the admin API (docs/stripe.md): set by
 * `PATCH /apps/{appid}` with `stripe`, shown without its secrets, and the
 * retry of a user's unpaid Stripe rewards.
 */

export type StripeSettings = z.output<typeof stripeSettingsSchema>;

// The deployment's public origin when set (issue 47); else the dashboard's or the request's own, shown to the operator only.
const origin = (c: AdminContext) => publicOrigin(c.env) ?? callerOrigin(c);

/** The app view's `stripe`: never a secret. */
export async function stripeView(c: AdminContext, appid: string) {
	const row = await findStripeConfig(c.env.DB, appid);
	if (!row) return { connected: false as const, webhookurl: stripeWebhookUrl(origin(c), appid) };
	return {
		connected: true as const,
		secretkeylast4: row.secretkey_last4,
		eventname: row.eventname,
		apiurl: row.apiurl,
		webhookurl: stripeWebhookUrl(origin(c), appid),
		events: await stripeEventCounts(c.env.DB, appid),
		// What paid nothing for a reason the operator acts on (docs/stripe.md "What the operator sees").
		cases: (await recentStripeCases(c.env.DB, appid)).map((k) => ({ ...k, at: new Date(k.at).toISOString() })),
	};
}

/** Refuses an `apiurl` the webhook URL policy would refuse: loopback only where loopback webhooks are allowed (development). */
export function checkStripeSettings(c: AdminContext, settings: StripeSettings | undefined): void {
	if (!settings?.apiurl) return;
	const problem = webhookUrlProblem(settings.apiurl, { ...webhookUrlPolicy(c.env, c.req.url), ownHosts: [] });
	if (problem) throw new ApiError(400, "validation_failed", `Invalid request. stripe.apiurl: ${problem}`, { fields: ["stripe.apiurl"] });
}

/** Connects (settings) or disconnects (null) the app, with the audit entry; the secrets are sealed before they are stored. */
export async function applyStripeSettings(c: AdminContext, appid: string, settings: StripeSettings): Promise<void> {
	const before = await findStripeConfig(c.env.DB, appid);
	if (settings === null) {
		if (!before) return;
		const audit = auditEntry(c, appid, {
			action: "app.stripe_disconnect",
			targetType: "app",
			targetId: appid,
			changes: { stripe: { before: "connected", after: null } },
		});
		await deleteStripeConfig(c.env.DB, appid, audit);
		return;
	}
	const last4 = settings.secretkey.slice(-4);
	const audit = auditEntry(c, appid, {
		action: "app.stripe_connect",
		targetType: "app",
		targetId: appid,
		changes: {
			secretkeylast4: { before: before?.secretkey_last4 ?? null, after: last4 },
			eventname: { before: before?.eventname ?? null, after: settings.eventname },
			apiurl: { before: before?.apiurl ?? null, after: settings.apiurl ?? null },
		},
	});
	await saveStripeConfig(
		c.env.DB,
		{
			appid,
			secretkey_box: await seal(c.env.SECRETS_KEY, `stripe-secretkey:${appid}`, settings.secretkey),
			webhooksecret_box: await seal(c.env.SECRETS_KEY, `stripe-webhooksecret:${appid}`, settings.webhooksecret),
			secretkey_last4: last4,
			eventname: settings.eventname,
			apiurl: settings.apiurl ?? null,
		},
		audit,
	);
}

export const stripeRoutes = new Hono<AdminEnv>();

/** Pays again the user's approved Stripe rewards still unpaid (after Stripe refused, or a customer id was fixed in Stripe). */
stripeRoutes.post("/apps/:appid/users/:userkey/payouts/retry", async (c) => {
	const { appid, userkey } = c.req.param();
	const user = await findUser(c.env.DB, appid, { userkey });
	if (!user) throw userNotFound();
	const result = await ledgerFor(c.env, appid, user.userkey).retryPayouts();
	if (!result.ok) throw new ApiError(409, "reward_locked", result.error.message);
	// Money leaves on the operator's word: the retry names who asked (the dashboard's member or the token), issue 31.
	const audit = auditEntry(c, appid, {
		action: "payout.retry",
		targetType: "user",
		targetId: user.userkey,
		changes: { queued: { before: null, after: result.queued } },
	});
	await recordAudit(c.env.DB, audit);
	return c.json({ userkey: user.userkey, queued: result.queued }, 202);
});
