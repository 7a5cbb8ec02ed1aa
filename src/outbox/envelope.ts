/**
 * The JSON a webhook receiver gets: `{"type", "timestamp", "data"}` as the
 * Standard Webhooks specification suggests. `timestamp` is when the event
 * happened (the outbox row's creation), the same on every retry.
 */
export interface WebhookEnvelope {
	type: string;
	timestamp: string;
	data: unknown;
}

export function webhookEnvelope(type: string, createdAt: string, data: unknown): WebhookEnvelope {
	return { type, timestamp: new Date(createdAt).toISOString(), data };
}

/** The exact body that is signed and sent. */
export function webhookBody(type: string, createdAt: string, data: unknown): string {
	return JSON.stringify(webhookEnvelope(type, createdAt, data));
}
