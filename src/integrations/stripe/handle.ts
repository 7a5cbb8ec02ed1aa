import { type App, findApp } from "../../db/apps";
import { getCampaign } from "../../db/campaigns";
import { countStripeEvent, raiseRefunded, saveStripeLink } from "../../db/stripe";
import { finishInboxEvent, inboxEventDone, releaseWaitingRefunds } from "../../db/stripe-inbox";
import { minorToUnits } from "../../domain/currency";
import { appKeyAudit } from "../../ledger/audit";
import { conversionSchema, recordConversionEvent } from "../../operations/conversion-work";
import { reverseConversion } from "../../operations/reversal-work";
import type { WorkContext } from "../../operations/work";
import { stripeConnection } from "./connection";
import { isDisputeEvent, runDispute } from "./disputes";
import { paymentOf, type StripeEventMessage, type StripeObject, stripeCustomId } from "./events";
import { identifyPayer } from "./identity";
import { linkedPaymentOrWait } from "./payment-link";
import type { Settle } from "./payouts";

/**
 * Stripe events into conversions and refunds (docs/stripe.md), from the
 * Stripe queue, each event stored in the inbox (db/stripe-inbox.ts) before
 * Stripe was answered. The shared work (conversion-work.ts,
 * reversal-work.ts) answers a typed outcome, no request is built: an event
 * is marked done only when its work was applied, a duplicate, or refused for
 * good; `retry_later` (a reward locked by another change, D1 busy) and any
 * thrown error (the consumer retries it) leave it open, so the queue or the
 * sweep brings it back.
 */

export async function runStripeEvent(env: Env, work: StripeEventMessage, waitUntil: (p: Promise<unknown>) => void): Promise<Settle> {
	const now = Date.now();
	if (await inboxEventDone(env.DB, work.appid, work.eventid)) {
		await countStripeEvent(env.DB, work.appid, "duplicate");
		return "ack";
	}
	const finish = (outcome: string) => finishInboxEvent(env.DB, work.appid, work.eventid, outcome, now).then(() => "ack" as const);
	const app = await findApp(env.DB, work.appid);
	const connection = app ? await stripeConnection(env, app.appid) : null;
	if (!app || !connection) return finish("not_connected");
	const ctx: WorkContext = { env, app, waitUntil };
	if (work.type === "charge.refunded") return refund(ctx, work, finish);
	if (isDisputeEvent(work.type)) return runDispute(ctx, work, finish);
	const payment = paymentOf(work.type, work.object);
	if (!payment) return finish("not_paid");
	// Who paid, from what the product set (identity.ts); a referrer's promotion code attributes before the conversion.
	const identity = await identifyPayer(ctx, connection, work);
	if (identity.kind === "retry") return "retry";
	if (identity.kind === "none") return finish(identity.outcome);
	const user = identity.payer;
	const currency = (work.object.currency ?? "").toLowerCase();
	// A test twin reads its live app's campaigns (docs/test-mode.md): `campaignAppid`, never its own appid.
	const campaign = await getCampaign(env.DB, app.campaignAppid, user.campaignid);
	// No conversion across currencies without a rate: a payment in another currency than the campaign's earns nothing.
	if (!campaign || campaign.currency.toLowerCase() !== currency) return finish("currency_mismatch");
	const customid = await stripeCustomId(app.appid, payment.externalid);
	const input = conversionSchema.safeParse({
		userkey: user.userkey,
		eventname: connection.eventname,
		customid,
		transactionvalue: minorToUnits(payment.amount, currency),
		// The event keeps the Stripe object it stands for (docs/stripe.md).
		extrainfo: JSON.stringify({ stripe: { externalid: payment.externalid } }),
		growthhack: campaign.growthhack,
	});
	// What the payment says cannot be a conversion (an amount above the contract's limit, say): no retry changes that.
	if (!input.success) return finish("refused:validation_failed");
	const outcome = await recordConversionEvent(ctx, input.data);
	if (outcome.kind === "retry_later") return "retry";
	if (outcome.kind === "refused") return finish(`refused:${outcome.code}`);
	await saveStripeLink(env.DB, app.appid, { customid, ...payment.links, currency, amount_minor: payment.amount });
	await releaseRefunds(env, app, [payment.links.charge, payment.links.payment_intent, payment.links.invoice]);
	return finish(outcome.kind === "duplicate" ? "duplicate" : "converted");
}

/** Refunds that arrived before this payment go back to the queue now that it is linked. */
async function releaseRefunds(env: Env, app: App, refs: (string | null)[]): Promise<void> {
	const released = await releaseWaitingRefunds(
		env.DB,
		app.appid,
		refs.filter((r): r is string => r !== null),
		Date.now(),
	);
	if (released.length === 0) return;
	await env.STRIPE_WORK.sendBatch(released.map((e) => ({ body: { stripeEvent: inboxMessage(e) } })));
}

/** A stored inbox event as the queue message the endpoint sent. */
export function inboxMessage(e: { appid: string; eventid: string; type: string; object: string }): StripeEventMessage {
	return { appid: e.appid, eventid: e.eventid, type: e.type, object: JSON.parse(e.object) };
}

/**
 * A refund, as the charge's refunded total (`amount_refunded`, cumulative):
 * the ledgers take what their refunds did not take yet, so duplicated,
 * concurrent and reordered events converge to the largest total, and a
 * total at or above the payment reverses it whole. A refund of a payment not
 * linked yet waits in the inbox for it.
 */
async function refund(ctx: WorkContext, work: StripeEventMessage, finish: (outcome: string) => Promise<"ack">): Promise<Settle> {
	const { env, app } = ctx;
	const charge: StripeObject = work.object;
	const link = await linkedPaymentOrWait(ctx, work, { charge: charge.id, payment_intent: charge.payment_intent, invoice: charge.invoice });
	if (!link) return "ack";
	if ((charge.currency ?? link.currency).toLowerCase() !== link.currency) return finish("currency_mismatch");
	const refunded = charge.amount_refunded ?? 0;
	if (refunded <= 0) return finish("not_refunded");
	const outcome = await reverseConversion(ctx, {
		customid: link.customid,
		refundedTotal: minorToUnits(refunded, link.currency),
		// Named by the charge and its total: the same total twice is the same refund.
		refundid: `stripe:${charge.id}:${refunded}`,
		reason: "Refunded in Stripe",
		audit: appKeyAudit(app.apikey),
	});
	if (outcome.kind === "retry_later") return "retry";
	if (outcome.kind === "refused") return finish(`refused:${outcome.code}`);
	await raiseRefunded(env.DB, app.appid, link.customid, refunded);
	return finish(outcome.kind === "applied" ? "refunded" : "duplicate");
}
