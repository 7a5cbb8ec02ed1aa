import { countStripeEvent, type FoundLink, findStripeLink } from "../../db/stripe";
import { releaseWaitingRefunds, waitForPayment } from "../../db/stripe-inbox";
import type { WorkContext } from "../../operations/work";
import type { StripeEventMessage } from "./events";

/**
 * The recorded payment an event about a charge names (a refund, a dispute):
 * matched by the charge, else the payment intent, else the invoice
 * (`stripe_links`, docs/stripe.md "Linking ids"). When the payment is not
 * recorded yet, the event waits in the inbox for it (counted
 * `waiting_payment`; the payment's conversion sends it again) and null is
 * answered: the caller acknowledges the message.
 */
export async function linkedPaymentOrWait(
	ctx: WorkContext,
	work: StripeEventMessage,
	ids: { charge: string | null; payment_intent: string | null; invoice: string | null },
): Promise<FoundLink | null> {
	const { env, app } = ctx;
	const link = await findStripeLink(env.DB, app.appid, ids);
	if (link) return link;
	const ref = ids.payment_intent ?? ids.charge ?? work.object.id;
	await waitForPayment(env.DB, app.appid, work.eventid, ref);
	// The payment may have been linked between the two: then it released nothing, so look again.
	const late = await findStripeLink(env.DB, app.appid, ids);
	if (!late) {
		await countStripeEvent(env.DB, app.appid, "waiting_payment");
		return null;
	}
	await releaseWaitingRefunds(env.DB, app.appid, [ref], Date.now());
	return late;
}
