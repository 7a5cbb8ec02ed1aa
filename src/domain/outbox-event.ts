/**
 * The event model (issue 31): what an outbox event is, a webhook or an
 * email an app is owed, independent of how it is stored (src/db/) or
 * delivered (src/outbox/). In the domain layer so that both take it from
 * below, and no import circle closes through it.
 */

/** Webhook event types the service emits (see docs/webhooks.md). */
export type WebhookType =
	| "user.registered"
	| "referral.attributed"
	| "conversion.recorded"
	| "reward.created"
	| "reward.status_changed"
	| "reward.redeemed"
	| "conversion.reversed"
	| "reward.reversed"
	| "reward.clawback_paid"
	| "reward.payout_failed";

/** The emails the outbox sends. An invitation's text holds a credential (its link): never shown by the delivery log (deliveries.ts). */
export type EmailType = "email.outreach" | "email.reminder" | "email.invitation";

/** An email to send: rendered when recorded, so a retry sends the same text. */
export interface EmailPayload {
	to: string;
	toName?: string | null;
	subject: string;
	text: string;
	html: string;
	/** False for an email of an app's test keys (docs/test-mode.md); absent in emails recorded before test mode (live). */
	livemode?: boolean;
}

export type OutboxEvent =
	| { eventid: string; appid: string; kind: "webhook"; type: WebhookType; payload: Record<string, unknown>; createdAt: string }
	| { eventid: string; appid: string; kind: "email"; type: EmailType; payload: EmailPayload; createdAt: string };
