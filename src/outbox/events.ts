import { z } from "zod";
import { markEnqueued } from "../db/outbox-events";
import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import type { EmailPayload, EmailType, OutboxEvent, WebhookType } from "../domain/outbox-event";
import { CARRIED_MESSAGE_BYTES, jsonBytes, packBatches } from "./queue-batches";

/** An attempt record as it travels in a log note (attempt-log.ts). */
export const loggedAttemptSchema = z.object({
	attempt: z.number().int().min(0),
	outcome: z.enum(["delivered", "failed", "skipped"]),
	responseCode: z.number().int().nullable(),
	durationMs: z.number().min(0),
	error: z.string().nullable(),
});
export type LoggedAttempt = z.infer<typeof loggedAttemptSchema>;

/** Email types whose text holds a credential (an invitation's link): never shown by the delivery log (deliveries.ts). */
export const SECRET_EMAIL_TYPES: readonly string[] = ["email.invitation"];

/**
 * The body of a queue message: the outbox row to deliver and, from current
 * producers, the event itself, so the consumer needs no read of it (only of
 * its `delivered_at`). A message with only `eventid` (the sweep, a
 * redelivery, an older producer) is read from D1.
 */
export interface OutboxMessage {
	eventid: string;
	event?: CarriedEvent;
	/**
	 * A log note, not a delivery: an attempt already made whose record D1 could
	 * not take at the time (attempt-log.ts); the consumer writes it and sends nothing.
	 */
	logged?: LoggedAttempt;
}

/** What delivery needs of an event, carried in its queue message. */
export interface CarriedEvent {
	appid: string;
	kind: string;
	type: string;
	payload: unknown;
	createdAt: string;
}

/**
 * The longest event id the service makes, with room: a refund's
 * `evt_reversal_<appid>_test_<customid token>_<16 hex>`, whose customid token
 * (domain/ids.ts, customIdToken) is the base64url of up to 100 characters of
 * 4 UTF-8 bytes each, 535 characters: some 600 in all. The bound was 200, and
 * the consumer dropped the conversion webhooks of such customids as invalid
 * (test/operations/customid).
 */
export const MAX_EVENTID = 1_000;

/** Validates a queue message body before the consumer trusts it. */
export const outboxMessageSchema = z.object({
	eventid: z.string().min(1).max(MAX_EVENTID),
	event: z
		.object({
			appid: z.string().min(1),
			kind: z.string().min(1),
			type: z.string().min(1),
			payload: z.unknown(),
			createdAt: z.string().min(1),
		})
		.optional(),
	logged: loggedAttemptSchema.optional(),
});

/** The queue message of an event, carrying it when the whole message stays within CARRIED_MESSAGE_BYTES (queue-batches.ts). */
export function outboxMessage(event: OutboxEvent): OutboxMessage {
	const carried: CarriedEvent = {
		appid: event.appid,
		kind: event.kind,
		type: event.type,
		payload: event.payload,
		createdAt: event.createdAt,
	};
	const message: OutboxMessage = { eventid: event.eventid, event: carried };
	// Bytes, not characters: 50,000 "€" are 150 KB of UTF-8, over a message's 128 KB.
	return jsonBytes(message) <= CARRIED_MESSAGE_BYTES ? message : { eventid: event.eventid };
}

/** What an email event's payload must hold to be sent (checked again by the consumer). */
export const emailPayloadSchema = z.object({
	to: z.email(),
	toName: z.string().nullish(),
	subject: z.string().min(1),
	text: z.string(),
	html: z.string(),
	livemode: z.boolean().optional(),
});

/** A webhook event with a fresh id (or a deterministic one, when a retry must not duplicate it). */
export function webhookEvent(appid: string, type: WebhookType, payload: Record<string, unknown>, eventid = newEventId()): OutboxEvent {
	return { eventid, appid, kind: "webhook", type, payload, createdAt: nowIso() };
}

/** An email event with a fresh id. */
/** Its payload says `livemode` (docs/test-mode.md): false for an email of an app's test keys. */
export function emailEvent(appid: string, type: EmailType, payload: EmailPayload, livemode: boolean): OutboxEvent {
	return { eventid: newEventId(), appid, kind: "email", type, payload: { ...payload, livemode }, createdAt: nowIso() };
}

/** What a send in several batches did: the events of the batches that failed (none: all sent) and the first error. */
export interface SendReport {
	failed: OutboxEvent[];
	error: unknown;
}

/**
 * Hands events recorded in D1 to the queue, each message carrying its event
 * (or only its id when large), in as many `sendBatch` calls as the Queues
 * limits need (queue-batches.ts). Every batch is tried, so one refused batch
 * does not hold the others back; the report names the events of the failed ones.
 * No D1 round trip: the consumer marks `enqueued_at` when it handles the
 * message, and the outbox sweep sends whatever was recorded but never
 * handled (the process died before this ran, or the send failed).
 */
export async function sendInBatches(env: Env, events: OutboxEvent[]): Promise<SendReport> {
	const report: SendReport = { failed: [], error: undefined };
	const messages = events.map((event) => ({ event, body: outboxMessage(event) }));
	for (const batch of packBatches(messages, (m) => jsonBytes(m.body))) {
		try {
			await env.OUTBOX.sendBatch(batch.map((m) => ({ body: m.body, contentType: "json" as const })));
		} catch (error) {
			report.failed.push(...batch.map((m) => m.event));
			report.error ??= error;
		}
	}
	return report;
}

/** sendInBatches for callers that only need to know that something failed (it throws the first error, after trying every batch). */
export async function sendOutboxEvents(env: Env, events: OutboxEvent[]): Promise<void> {
	if (events.length === 0) return;
	const { failed, error } = await sendInBatches(env, events);
	if (failed.length > 0) throw error;
}

/**
 * Hands recorded events to the queue by id and marks them enqueued (the
 * sweep and redeliveries; producers use sendOutboxEvents). Events whose send
 * fails stay unmarked for the outbox sweep to pick up.
 */
export async function enqueueOutboxEvents(env: Env, eventids: string[]): Promise<void> {
	// D1 binds at most 100 parameters per statement (and sendBatch takes at most 100 messages): chunks of 90.
	for (let i = 0; i < eventids.length; i += ENQUEUE_CHUNK) {
		const chunk = eventids.slice(i, i + ENQUEUE_CHUNK);
		await sendEventIds(env, chunk);
		await markEnqueued(env.DB, chunk, nowIso());
	}
}

/** Sends messages of an event id only (~100 bytes each: 90 stay far under a batch's bytes); the consumer reads each event from D1. */
export async function sendEventIds(env: Env, eventids: string[]): Promise<void> {
	for (let i = 0; i < eventids.length; i += ENQUEUE_CHUNK) {
		const chunk = eventids.slice(i, i + ENQUEUE_CHUNK);
		await env.OUTBOX.sendBatch(chunk.map((eventid) => ({ body: { eventid } satisfies OutboxMessage, contentType: "json" as const })));
	}
}

/** Events per sendBatch and per `IN (...)` list: under D1's 100 bound parameters with room for the others. */
export const ENQUEUE_CHUNK = 90;
