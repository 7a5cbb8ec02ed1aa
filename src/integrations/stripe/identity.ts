import { countStripeEvent, userOfCustomer } from "../../db/stripe";
import { recordStripeCase } from "../../db/stripe-identity";
import { findUser } from "../../db/users";
import type { WorkContext } from "../../operations/work";
import type { StripeConnection } from "./connection";
import type { StripeEventMessage, StripeObject } from "./events";
import { attributeByPromotionCode, type Payer, registerByPromotionCode } from "./promotion";

/**
 * Which user a Stripe payment is for (issue 47, docs/stripe.md "How an event
 * finds its user"): identity comes from what the product set, never from an
 * email the payer typed (Stripe never verifies it).
 *
 * 1. The customer is a user's `paymentcustomerid` (set by the product through
 *    register or updateuser): that user, and its promotion code may attribute
 *    it (promotion.ts).
 * 2. Else, when the payment's email is a user's: nothing. That user never
 *    linked this customer, so the payment may be theirs or a stranger's using
 *    their address; no conversion, no referrer, no link. Counted
 *    `unlinked_email` and recorded as a case the operator sees (the app's
 *    `stripe.cases`, the dashboard's Stripe section): the fix is the
 *    product's `updateuser` with this `paymentcustomerid`, if it is theirs.
 * 3. Else, with a referrer's promotion code: a new user known by the customer
 *    alone, referred by the code's owner (promotion.ts).
 * 4. Else nobody: `unknown_customer`.
 */

export type PaymentIdentity = { kind: "payer"; payer: Payer } | { kind: "none"; outcome: string } | { kind: "retry" };

/** The outcome, count and case kind of a payment whose email is a user's who never linked its customer. */
export const UNLINKED_EMAIL = "unlinked_email";

const none = (outcome: string): PaymentIdentity => ({ kind: "none", outcome });

export async function identifyPayer(ctx: WorkContext, connection: StripeConnection, work: StripeEventMessage): Promise<PaymentIdentity> {
	const { env, app } = ctx;
	const customer = work.object.customer;
	if (!customer) return none("unknown_customer");
	const known = await userOfCustomer(env.DB, app.appid, customer);
	if (known) {
		if (known.erased_at !== null) return none("unknown_customer");
		return { kind: "payer", payer: await attributeByPromotionCode(ctx, connection, work, customer, known) };
	}
	const email = emailOf(work.object);
	const holder = email ? await findUser(env.DB, app.appid, { email }) : null;
	if (holder && holder.erasedAt === null) {
		const amount = work.object.amount_paid ?? work.object.amount_total ?? 0;
		const detail = `${work.type}, ${amount} ${(work.object.currency ?? "").toUpperCase()} (minor units)`;
		const at = Date.now();
		await recordStripeCase(env.DB, app.appid, {
			eventid: work.eventid,
			kind: UNLINKED_EMAIL,
			customer,
			userkey: holder.userkey,
			detail,
			at,
		});
		return none(UNLINKED_EMAIL);
	}
	const created = await registerByPromotionCode(ctx, connection, work, customer);
	if (created === "retry") {
		await countStripeEvent(env.DB, app.appid, "customer_claimed_by_another_event");
		return { kind: "retry" };
	}
	return created ? { kind: "payer", payer: created } : none("unknown_customer");
}

/** The payer's email as the payment names it (an invoice's `customer_email`, a session's `customer_details.email`), lower-cased like every stored email; null when it is not an address. */
function emailOf(o: StripeObject): string | null {
	const email = (o.customer_email ?? o.customer_details?.email ?? "").trim().toLowerCase();
	return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) && email.length <= 254 ? email : null;
}
