import { type AttemptRow, type DeliveryRow, deliveryRows, deliveryWithAttempts } from "../db/delivery-attempts";
import type { OutboxEventRow } from "../db/outbox-events";
import type { AttemptOutcome, DeliveryApp } from "../domain/delivery";
import { SECRET_EMAIL_TYPES } from "./events";
import { MAX_ATTEMPTS } from "./retry";

/** An email payload with its body left out (its recipient and subject kept). */
function withoutSecret(payload: unknown): unknown {
	if (typeof payload !== "object" || payload === null) return "(secret)";
	const { to, subject } = payload as { to?: unknown; subject?: unknown };
	return { to, subject, text: "(secret)", html: "(secret)" };
}

/**
 * Deliveries of outbox events: what one attempt needs and how it is logged
 * (the consumer), and where a delivery stands as the admin API shows it. The
 * rows are read and written in src/db/ (outbox-events.ts, delivery-attempts.ts).
 */

export interface DeliveryTarget {
	event: OutboxEventRow;
	app: DeliveryApp | null;
}

/* ---- Reads for the admin API ---- */

/** Error text prefix of a failure that is not retried (the message is acked). */
export const PERMANENT_FAILURE = "permanent: ";

export type DeliveryStatus = "pending" | "delivered" | "skipped" | "retrying" | "failed" | "dead_lettered";

export interface AttemptView {
	attempt: number;
	outcome: AttemptOutcome;
	responsecode: number | null;
	durationms: number;
	error: string | null;
	at: string;
}

const attemptView = (row: AttemptRow): AttemptView => ({
	attempt: row.attempt,
	outcome: row.outcome,
	responsecode: row.response_code,
	durationms: row.duration_ms,
	error: row.error,
	at: row.created_at,
});

/** Where a delivery stands, from its row and its latest attempt. */
export function deliveryStatus(
	deliveredAt: string | null,
	last: Pick<AttemptView, "attempt" | "outcome" | "error"> | null,
): DeliveryStatus {
	if (deliveredAt) return last?.outcome === "skipped" ? "skipped" : "delivered";
	if (last?.outcome !== "failed") return "pending";
	if (last.error?.startsWith(PERMANENT_FAILURE)) return "failed";
	return last.attempt >= MAX_ATTEMPTS ? "dead_lettered" : "retrying";
}

export interface DeliverySummary {
	eventid: string;
	kind: string;
	type: string;
	createdat: string;
	enqueuedat: string | null;
	deliveredat: string | null;
	status: DeliveryStatus;
	attempts: number;
	lastattempt: AttemptView | null;
}

function summary(row: DeliveryRow): DeliverySummary {
	const last =
		row.attemptid === null
			? null
			: attemptView({
					attemptid: row.attemptid,
					attempt: row.attempt ?? 0,
					outcome: row.outcome ?? "failed",
					response_code: row.response_code,
					duration_ms: row.duration_ms ?? 0,
					error: row.error,
					created_at: row.attempt_at ?? "",
				});
	return {
		eventid: row.eventid,
		kind: row.kind,
		type: row.type,
		createdat: row.created_at,
		enqueuedat: row.enqueued_at,
		deliveredat: row.delivered_at,
		status: deliveryStatus(row.delivered_at, last),
		attempts: row.attempt_count,
		lastattempt: last,
	};
}

/** The app's most recent outbox events, newest first, with their latest attempt; `before`: the last eventid of the previous page. */
export async function listDeliveries(db: D1Database, appid: string, limit: number, before?: string): Promise<DeliverySummary[]> {
	return (await deliveryRows(db, appid, limit, before)).map(summary);
}

export interface DeliveryDetail extends DeliverySummary {
	payload: unknown;
	attemptlog: AttemptView[];
}

/** One event of the app with every attempt, oldest first; null when it is not that app's. */
export async function getDelivery(db: D1Database, appid: string, eventid: string): Promise<DeliveryDetail | null> {
	const found = await deliveryWithAttempts(db, appid, eventid);
	if (!found) return null;
	const { row, attempts } = found;
	// Shown as stored: a payload that is not JSON (never written by this code) is shown as its text.
	let payload: unknown;
	try {
		payload = JSON.parse(row.payload);
	} catch {
		payload = row.payload;
	}
	// An invitation's link is the credential that the email proves: the app's readers see to whom and what, never the link.
	if (SECRET_EMAIL_TYPES.includes(row.type)) payload = withoutSecret(payload);
	return { ...summary(row), payload, attemptlog: attempts.map(attemptView) };
}
