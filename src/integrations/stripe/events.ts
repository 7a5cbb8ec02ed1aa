import { z } from "zod";
import { findApp } from "../../db/apps";
import { getCampaign } from "../../db/campaigns";
import { countStripeEvent, findStripeLink, raiseRefunded, saveStripeLink, userOfCustomer } from "../../db/stripe";
import { minorToUnits } from "../../domain/currency";
import { ApiError } from "../../http/errors";
import type { OperationContext } from "../../http/operation";
import { registerconversionevent } from "../../operations/conversion";
import { reverseconversionevent } from "../../operations/reversal";
import { stripeConnection } from "./connection";
import type { Settle } from "./payouts";

/**
 * Stripe events into conversions and refunds (docs/stripe.md), from the
 * Stripe queue. The webhook endpoint (webhook.ts) checked the signature and
 * kept only the fields below. The service is here a client of its own
 * operations (`registerconversionevent`, `reverseconversionevent`), like the
 * HTTP layer, so a Stripe payment earns exactly what a reported conversion
 * would, with the same fraud checks, rules and webhooks.
 */

const id = z.string().min(1).max(255);
const optionalId = z
	.union([id, z.object({ id })])
	.nullish()
	.transform((v) => (v == null ? null : typeof v === "string" ? v : v.id));

/** The fields of a Stripe object the mapping reads (expanded objects reduced to their ids). */
export const stripeObjectSchema = z.object({
	id,
	customer: optionalId,
	currency: z.string().min(3).max(3).nullish(),
	amount_paid: z.number().int().nullish(),
	amount_total: z.number().int().nullish(),
	amount: z.number().int().nullish(),
	amount_refunded: z.number().int().nullish(),
	payment_status: z.string().nullish(),
	invoice: optionalId,
	payment_intent: optionalId,
	charge: optionalId,
});
export type StripeObject = z.output<typeof stripeObjectSchema>;

export const stripeEventMessageSchema = z.object({
	stripeEvent: z.object({ appid: z.string(), eventid: z.string(), type: z.string(), object: stripeObjectSchema }),
});
export type StripeEventMessage = z.output<typeof stripeEventMessageSchema>["stripeEvent"];

/** The event types the service maps; any other is answered 200 and counted. */
export const HANDLED_TYPES = ["invoice.paid", "checkout.session.completed", "charge.refunded"] as const;

/**
 * A payment: its `externalid` is the Stripe object the conversion stands for,
 * the invoice's id when there is one, so a checkout and its invoice make one
 * conversion, else the checkout session's.
 */
export function paymentOf(type: string, o: StripeObject) {
	if (type === "invoice.paid" && (o.amount_paid ?? 0) > 0) {
		const links = { invoice: o.id, payment_intent: o.payment_intent, charge: o.charge, checkout_session: null };
		return { externalid: o.id, amount: o.amount_paid ?? 0, links };
	}
	if (type === "checkout.session.completed" && o.payment_status === "paid" && (o.amount_total ?? 0) > 0) {
		const links = { invoice: o.invoice, payment_intent: o.payment_intent, charge: null, checkout_session: o.id };
		return { externalid: o.invoice ?? o.id, amount: o.amount_total ?? 0, links };
	}
	return null;
}

/**
 * The conversion's `customid` for a Stripe object: the contract's customids
 * are integers, so it is derived from the object's id (the first 56 bits of
 * SHA-256 of app and id, at most 17 digits): the same object always gives the
 * same customid, which is what makes a redelivered event a duplicate.
 */
export async function stripeCustomId(appid: string, externalid: string): Promise<string> {
	const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`stripe:${appid}:${externalid}`)));
	const hex = [...digest.slice(0, 7)].map((b) => b.toString(16).padStart(2, "0")).join("");
	return BigInt(`0x${hex}`).toString();
}

function operationContext(env: Env, app: NonNullable<Awaited<ReturnType<typeof findApp>>>, waitUntil: (p: Promise<unknown>) => void) {
	return { env, app, origin: "", waitUntil } satisfies OperationContext;
}

/** A refusal of the operation that a retry would not change (a 4xx, or input it does not take): counted and acked. */
function refusal(error: unknown): string | null {
	if (error instanceof ApiError && error.status < 500) return error.errorcode;
	return error instanceof z.ZodError ? "validation_failed" : null;
}

export async function runStripeEvent(env: Env, work: StripeEventMessage, waitUntil: (p: Promise<unknown>) => void): Promise<Settle> {
	const app = await findApp(env.DB, work.appid);
	const connection = app ? await stripeConnection(env, app.appid) : null;
	if (!app || !connection) return "ack";
	const ctx = operationContext(env, app, waitUntil);
	const count = (outcome: string) => countStripeEvent(env.DB, app.appid, outcome).then(() => "ack" as const);
	try {
		if (work.type === "charge.refunded") return await refund(env, ctx, work.object, count);
		const payment = paymentOf(work.type, work.object);
		if (!payment) return await count("not_paid");
		const customer = work.object.customer;
		const user = customer ? await userOfCustomer(env.DB, app.appid, customer) : null;
		if (!user || user.erased_at) return await count("unknown_customer");
		const currency = work.object.currency ?? "usd";
		const campaign = await getCampaign(env.DB, app.appid, user.campaignid);
		const customid = await stripeCustomId(app.appid, payment.externalid);
		const input = registerconversionevent.schema.parse({
			userkey: user.userkey,
			eventname: connection.eventname,
			customid,
			transactionvalue: minorToUnits(payment.amount, currency),
			// The event keeps the Stripe object it stands for (docs/stripe.md).
			extrainfo: JSON.stringify({ stripe: { externalid: payment.externalid } }),
			growthhack: campaign?.growthhack ?? "SaaS_Referrals",
		});
		const result = await registerconversionevent.handle(ctx, input);
		await saveStripeLink(env.DB, app.appid, { customid, ...payment.links, currency, amount_minor: payment.amount });
		return await count(result.duplicate ? "duplicate" : "converted");
	} catch (error) {
		const code = refusal(error);
		if (code) return await count(`refused:${code}`);
		throw error;
	}
}

/** A refund: the conversion of the charge (by charge, payment intent or invoice) reversed by what was refunded since. */
async function refund(env: Env, ctx: OperationContext, charge: StripeObject, count: (outcome: string) => Promise<"ack">): Promise<Settle> {
	const link = await findStripeLink(env.DB, ctx.app.appid, {
		charge: charge.id,
		payment_intent: charge.payment_intent,
		invoice: charge.invoice,
	});
	if (!link) return count("unknown_payment");
	const refunded = charge.amount_refunded ?? 0;
	if (refunded <= link.refunded_minor) return count("duplicate");
	const input = reverseconversionevent.schema.parse({
		customid: link.customid,
		refundvalue: minorToUnits(refunded - link.refunded_minor, link.currency),
		// Keyed by the charge's refunded total: a redelivery of the same refund reverses nothing twice.
		refundid: `${charge.id}:${refunded}`,
		reason: "Refunded in Stripe",
	});
	await reverseconversionevent.handle(ctx, input);
	await raiseRefunded(env.DB, ctx.app.appid, link.customid, refunded);
	return count("refunded");
}
