/**
 * The JSON a webhook receiver gets: `{"type", "timestamp", "livemode", "data"}`
 * as the Standard Webhooks specification suggests. `timestamp` is when the
 * event happened (the outbox row's creation), the same on every retry.
 * `livemode` is false for what an app's test keys made (docs/test-mode.md):
 * both modes deliver to the app's one webhook URL.
 */
export interface WebhookEnvelope {
	type: string;
	timestamp: string;
	livemode: boolean;
	data: unknown;
}

export function webhookEnvelope(type: string, createdAt: string, data: unknown, livemode: boolean): WebhookEnvelope {
	return { type, timestamp: new Date(createdAt).toISOString(), livemode, data };
}

/** The exact body that is signed and sent. */
export function webhookBody(type: string, createdAt: string, data: unknown, livemode: boolean): string {
	return JSON.stringify(webhookEnvelope(type, createdAt, data, livemode));
}
