import { nowIso } from "../domain/dates";
import { MAX_ATTEMPTS } from "./retry";

/** An `outbox_events` row as stored. `payload` is JSON text. */
export interface OutboxRow {
	eventid: string;
	appid: string;
	kind: string;
	type: string;
	payload: string;
	created_at: string;
	enqueued_at: string | null;
	delivered_at: string | null;
}

/** What the app contributes to a delivery; null when the app no longer exists. */
export interface DeliveryApp {
	webhookurl: string | null;
	webhookSecret: string;
	emailsender: string | null;
}

export interface DeliveryTarget {
	event: OutboxRow;
	app: DeliveryApp | null;
}

/** The event and its app in one round trip; null when the event row is not (yet) visible. */
export async function loadDeliveryTarget(db: D1Database, eventid: string): Promise<DeliveryTarget | null> {
	const row = await db
		.prepare(
			`SELECT e.eventid, e.appid, e.kind, e.type, e.payload, e.created_at, e.enqueued_at, e.delivered_at,
			        a.appid AS app_appid, a.webhookurl, a.webhook_secret, a.emailsender
			 FROM outbox_events e LEFT JOIN apps a ON a.appid = e.appid
			 WHERE e.eventid = ?`,
		)
		.bind(eventid)
		.first<
			OutboxRow & { app_appid: string | null; webhookurl: string | null; webhook_secret: string | null; emailsender: string | null }
		>();
	if (!row) return null;
	const { app_appid, webhookurl, webhook_secret, emailsender, ...event } = row;
	return {
		event,
		app: app_appid === null ? null : { webhookurl, webhookSecret: webhook_secret ?? "", emailsender },
	};
}

export type AttemptOutcome = "delivered" | "failed" | "skipped";

export interface AttemptRecord {
	eventid: string;
	attempt: number;
	outcome: AttemptOutcome;
	responseCode: number | null;
	durationMs: number;
	error: string | null;
}

/**
 * Logs one attempt; a delivered or skipped one also marks the event
 * delivered, in the same transaction.
 */
export async function recordAttempt(db: D1Database, record: AttemptRecord): Promise<void> {
	const now = nowIso();
	const insert = db
		.prepare(
			`INSERT INTO delivery_attempts (eventid, attempt, outcome, response_code, duration_ms, error, created_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?)`,
		)
		.bind(
			record.eventid,
			record.attempt,
			record.outcome,
			record.responseCode,
			Math.max(0, Math.round(record.durationMs)),
			record.error,
			now,
		);
	if (record.outcome === "failed") {
		await insert.run();
		return;
	}
	await db.batch([
		insert,
		// Also leaves the sweep's pending index: a delivered event needs no enqueue.
		db
			.prepare(
				"UPDATE outbox_events SET delivered_at = ?, enqueued_at = COALESCE(enqueued_at, ?) WHERE eventid = ? AND delivered_at IS NULL",
			)
			.bind(now, now, record.eventid),
	]);
}

/* ---- Reads and changes for the admin API ---- */

/** Error text prefix of a failure that is not retried (the message is acked). */
export const PERMANENT_FAILURE = "permanent: ";

export type DeliveryStatus = "pending" | "delivered" | "skipped" | "retrying" | "failed" | "dead_lettered";

interface AttemptRow {
	attemptid: number;
	attempt: number;
	outcome: AttemptOutcome;
	response_code: number | null;
	duration_ms: number;
	error: string | null;
	created_at: string;
}

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

type SummaryRow = OutboxRow & {
	attempt_count: number;
	attemptid: number | null;
	attempt: number | null;
	outcome: AttemptOutcome | null;
	response_code: number | null;
	duration_ms: number | null;
	error: string | null;
	attempt_at: string | null;
};

function summary(row: SummaryRow): DeliverySummary {
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

const SUMMARY_SELECT = `
	SELECT e.*,
	       (SELECT COUNT(*) FROM delivery_attempts c WHERE c.eventid = e.eventid) AS attempt_count,
	       l.attemptid, l.attempt, l.outcome, l.response_code, l.duration_ms, l.error, l.created_at AS attempt_at
	FROM outbox_events e
	LEFT JOIN delivery_attempts l
	       ON l.attemptid = (SELECT MAX(m.attemptid) FROM delivery_attempts m WHERE m.eventid = e.eventid)`;

/** The app's most recent outbox events, newest first, with their latest attempt; `before`: the last eventid of the previous page. */
export async function listDeliveries(db: D1Database, appid: string, limit: number, before?: string): Promise<DeliverySummary[]> {
	const { results } = await db
		.prepare(
			`${SUMMARY_SELECT} WHERE e.appid = ?1
			 AND (?3 IS NULL OR (e.created_at, e.eventid) < (SELECT created_at, eventid FROM outbox_events WHERE eventid = ?3 AND appid = ?1))
			 ORDER BY e.created_at DESC, e.eventid DESC LIMIT ?2`,
		)
		.bind(appid, limit, before ?? null)
		.all<SummaryRow>();
	return results.map(summary);
}

export interface DeliveryDetail extends DeliverySummary {
	payload: unknown;
	attemptlog: AttemptView[];
}

/** One event of the app with every attempt, oldest first; null when it is not that app's. */
export async function getDelivery(db: D1Database, appid: string, eventid: string): Promise<DeliveryDetail | null> {
	const [head, attempts] = await db.batch([
		db.prepare(`${SUMMARY_SELECT} WHERE e.eventid = ? AND e.appid = ?`).bind(eventid, appid),
		db.prepare("SELECT * FROM delivery_attempts WHERE eventid = ? ORDER BY attemptid").bind(eventid),
	]);
	const row = head?.results[0] as SummaryRow | undefined;
	if (!row) return null;
	let payload: unknown;
	try {
		payload = JSON.parse(row.payload);
	} catch {
		payload = row.payload;
	}
	return { ...summary(row), payload, attemptlog: ((attempts?.results ?? []) as AttemptRow[]).map(attemptView) };
}

/** Clears `delivered_at` so the event goes out again; false when it is not that app's event. */
export async function resetForRedelivery(db: D1Database, appid: string, eventid: string): Promise<boolean> {
	const result = await db
		.prepare("UPDATE outbox_events SET delivered_at = NULL WHERE eventid = ? AND appid = ?")
		.bind(eventid, appid)
		.run();
	return result.meta.changes > 0;
}

/** Leaves an event to the outbox sweep (its queue send failed). */
export async function markNotEnqueued(db: D1Database, eventid: string): Promise<void> {
	await db.prepare("UPDATE outbox_events SET enqueued_at = NULL WHERE eventid = ?").bind(eventid).run();
}
