import { z } from "zod";

/**
 * What the service reads of Stripe's events (docs/stripe.md): the webhook
 * endpoint (webhook.ts) checks the signature and keeps only the fields
 * below; handle.ts turns them into conversions and refunds. Both payload
 * shapes link: the pinned library's API version lists an invoice's payments
 * under `invoice.payments` (its `charge` and `payment_intent` are gone), the
 * older one names them on the invoice.
 */

const id = z.string().min(1).max(255);
const optionalId = z
	.union([id, z.object({ id })])
	.nullish()
	.transform((v) => (v == null ? null : typeof v === "string" ? v : v.id));

/**
 * A discount as a payment carries it (docs/stripe.md, "Promotion codes"): an invoice of the pinned API version lists
 * its discounts as ids (`di_...`, expanded only on request) or Stripe.Discount objects; a checkout session lists
 * Stripe.Checkout.Session.Discount objects. Only the promotion code's id is kept (an expanded one reduced to it).
 */
const discountSchema = z.union([id, z.object({ promotion_code: optionalId })]);
export type StripeDiscount = z.output<typeof discountSchema>;

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
	/** A dispute's status (Stripe.Dispute.Status): `lost` on `charge.dispute.closed` reverses the payment. */
	status: z.string().max(50).nullish().catch(null),
	invoice: optionalId,
	payment_intent: optionalId,
	charge: optionalId,
	/** The discounts of an invoice or a checkout session; a list that is not one reads as none (no attribution by code). */
	discounts: z.array(discountSchema).max(100).nullish().catch(null),
	/** Who paid, for a user created from a promotion code: an invoice's `customer_email`, a session's `customer_details.email`. */
	customer_email: z.string().max(200).nullish().catch(null),
	customer_details: z
		.object({ email: z.string().max(200).nullish().catch(null) })
		.nullish()
		.catch(null),
	/** The pinned API version's invoice payments (Stripe.InvoicePayment: payment.payment_intent or payment.charge). */
	payments: z
		.object({
			data: z
				.array(z.object({ payment: z.object({ payment_intent: optionalId, charge: optionalId }).nullish() }))
				.max(100)
				.catch([]),
		})
		.nullish(),
});
export type StripeObject = z.output<typeof stripeObjectSchema>;

export const stripeEventMessageSchema = z.object({
	stripeEvent: z.object({ appid: z.string(), eventid: z.string(), type: z.string(), object: stripeObjectSchema }),
});
export type StripeEventMessage = z.output<typeof stripeEventMessageSchema>["stripeEvent"];

/** The event types the service maps; any other is answered 200 and counted. */
export const HANDLED_TYPES = [
	"invoice.paid",
	"checkout.session.completed",
	"charge.refunded",
	// Chargebacks (issue 47, disputes.ts): a Stripe.Dispute names its charge and payment intent.
	"charge.dispute.created",
	"charge.dispute.closed",
] as const;

/**
 * A payment: its `externalid` is the Stripe object the conversion stands for,
 * the invoice's id when there is one, so a checkout and its invoice make one
 * conversion, else the checkout session's.
 */
export function paymentOf(type: string, o: StripeObject) {
	if (type === "invoice.paid" && (o.amount_paid ?? 0) > 0) {
		const paid = (o.payments?.data ?? []).map((p) => p.payment).find((p) => p?.payment_intent || p?.charge);
		const links = {
			invoice: o.id,
			payment_intent: o.payment_intent ?? paid?.payment_intent ?? null,
			charge: o.charge ?? paid?.charge ?? null,
			checkout_session: null,
		};
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
