import { Hono } from "hono";
import Stripe from "stripe";
import { z } from "zod";
import { countStripeEvent } from "../../db/stripe";
import { storeInboxEvent } from "../../db/stripe-inbox";
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
const envelopeSchema = z.object({
	id: z.string().min(1).max(255),
	type: z.string().min(1).max(255),
	data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
const malformed = (error: z.ZodError) =>
	new ApiError(
		400,
		"invalid_event",
		`The signed event is not a Stripe event this endpoint can read: ${z.prettifyError(error)}`.slice(0, 500),
	);
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
	// Signed is not well formed: an event without an id, a type or `data.object` is refused 400, never a 500.
	const envelope = envelopeSchema.safeParse(event);
	if (!envelope.success) throw malformed(envelope.error);
	if (!(HANDLED_TYPES as readonly string[]).includes(envelope.data.type)) {
		await countStripeEvent(c.env.DB, appid, `ignored:${envelope.data.type}`.slice(0, 100));
		return c.json({ received: true, handled: false });
	}
	const object = stripeObjectSchema.safeParse(envelope.data.data.object);
	if (!object.success) throw malformed(object.error);
	const work: StripeEventMessage = { appid, eventid: envelope.data.id, type: envelope.data.type, object: object.data };
	// Stored before the answer (db/stripe-inbox.ts): a crash after the 200 loses nothing, the sweep sends it again.
	const open = await storeInboxEvent(
		c.env.DB,
		{ appid, eventid: work.eventid, type: work.type, object: JSON.stringify(work.object) },
		Date.now(),
	);
	if (!open) {
		await countStripeEvent(c.env.DB, appid, "duplicate");
		return c.json({ received: true, handled: true });
	}
	// If this send fails the event is stored: the sweep sends it (the 200 stands).
	await c.env.STRIPE_WORK.send({ stripeEvent: work }).catch((error) =>
		console.warn(JSON.stringify({ msg: "stripe: event stored, enqueue failed; the sweep sends it", appid, error: String(error) })),
	);
	return c.json({ received: true, handled: true });
});
