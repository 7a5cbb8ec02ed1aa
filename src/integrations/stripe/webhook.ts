import { Hono } from "hono";
import Stripe from "stripe";
import { countStripeEvent } from "../../db/stripe";
import { ApiError } from "../../http/errors";
import { stripeConnection } from "./connection";
import { HANDLED_TYPES, type StripeEventMessage, stripeObjectSchema } from "./events";

/**
 * `POST /integrations/stripe/{appid}`: the endpoint an app's Stripe account
 * sends its events to (docs/stripe.md). The `Stripe-Signature` header is
 * checked with the app's webhook secret by the official library (HMAC-SHA256
 * of `{t}.{payload}`, 5 minutes of tolerance, as Stripe's libraries use): a
 * bad or stale signature is 400 and changes nothing. A handled event is
 * queued (the work may take longer than Stripe waits) and answered 200;
 * any other type is answered 200 and counted.
 */
export const stripeWebhookRoutes = new Hono<{ Bindings: Env }>();

/** Stripe's own limit on an event is far below this; larger bodies are not Stripe's. */
const MAX_BODY_BYTES = 512 * 1024;
const TOLERANCE_SECONDS = 300;
const crypto = Stripe.createSubtleCryptoProvider();
const tooLarge = () => new ApiError(413, "payload_too_large", "The body is larger than a Stripe event.");

stripeWebhookRoutes.post("/integrations/stripe/:appid", async (c) => {
	const appid = c.req.param("appid");
	const connection = await stripeConnection(c.env, appid);
	if (!connection) throw new ApiError(404, "app_not_found", "No app with that appid is connected to Stripe.");
	// Refused before it is read when the client says its size; checked again once read (a chunked body says nothing).
	if (Number(c.req.header("content-length") ?? 0) > MAX_BODY_BYTES) throw tooLarge();
	const payload = await c.req.text();
	if (payload.length > MAX_BODY_BYTES) throw tooLarge();
	const signature = c.req.header("stripe-signature") ?? "";
	let event: Stripe.Event;
	try {
		event = await connection.stripe.webhooks.constructEventAsync(payload, signature, connection.webhookSecret, TOLERANCE_SECONDS, crypto);
	} catch (error) {
		const reason = error instanceof Error ? error.message : String(error);
		throw new ApiError(
			400,
			"invalid_signature",
			`Stripe-Signature does not verify with this app's webhook secret: ${reason}`.slice(0, 300),
		);
	}
	// Events of one mode never touch the other (docs/test-mode.md): a test twin's connection holds a test key, so a live
	// event there (or a test event at a live key's endpoint) is counted and left alone.
	if (typeof event.livemode === "boolean" && event.livemode !== connection.livemode) {
		await countStripeEvent(c.env.DB, appid, event.livemode ? "ignored:livemode_at_test_endpoint" : "ignored:testmode_at_live_endpoint");
		return c.json({ received: true, handled: false });
	}
	if (!(HANDLED_TYPES as readonly string[]).includes(event.type)) {
		await countStripeEvent(c.env.DB, appid, `ignored:${event.type}`.slice(0, 100));
		return c.json({ received: true, handled: false });
	}
	const object = stripeObjectSchema.safeParse(event.data.object);
	if (!object.success) {
		await countStripeEvent(c.env.DB, appid, "malformed");
		return c.json({ received: true, handled: false });
	}
	const work: StripeEventMessage = { appid, eventid: event.id, type: event.type, object: object.data };
	await c.env.STRIPE_WORK.send({ stripeEvent: work });
	return c.json({ received: true, handled: true });
});
