import { nowIso } from "../domain/dates";
import type { AttemptOutcome, AttemptRecord } from "../domain/delivery";
import type { OutboxEventRow } from "./outbox-events";
import { firstRowOf, rowsOf } from "./rows";

/**
 * The delivery log (`delivery_attempts`): one row per attempt to send an
 * outbox event, written by the queue consumer and read by the admin API
 * together with the event's row (outbox-events.ts).
 */

/** The attempts of a batch as one JSON parameter: `done` marks the ones that end the event's delivery. */
function attemptsJson(records: AttemptRecord[]): string {
	return JSON.stringify(
		records.map((r) => ({
			eventid: r.eventid,
			attempt: r.attempt,
			outcome: r.outcome,
			code: r.responseCode,
			ms: Math.max(0, Math.round(r.durationMs)),
			error: r.error,
			done: r.outcome === "failed" ? 0 : 1,
		})),
	);
}

/**
 * Marks every event of the batch enqueued and attempted (it reached the
 * consumer, so the sweep must leave it alone), and a delivered or skipped one
 * also delivered.
 */
function markStatement(db: D1Database, rows: string, now: string): D1PreparedStatement {
	return db
		.prepare(
			`UPDATE outbox_events SET enqueued_at = COALESCE(enqueued_at, ?2), attempted_at = COALESCE(attempted_at, ?2),
			   delivered_at = CASE WHEN EXISTS (SELECT 1 FROM json_each(?1) WHERE json_extract(value, '$.eventid') = outbox_events.eventid
			     AND json_extract(value, '$.done') = 1) THEN COALESCE(delivered_at, ?2) ELSE delivered_at END
			 WHERE eventid IN (SELECT json_extract(value, '$.eventid') FROM json_each(?1))`,
		)
		.bind(rows, now);
}

/**
 * Logs the attempts of a batch in ONE round trip (one transaction): every
 * attempt row, and the marks of markStatement.
 */
export async function recordAttempts(db: D1Database, records: AttemptRecord[]): Promise<void> {
	if (records.length === 0) return;
	const now = nowIso();
	const rows = attemptsJson(records);
	await db.batch([
		db
			.prepare(
				`INSERT INTO delivery_attempts (eventid, attempt, outcome, response_code, duration_ms, error, created_at)
				 SELECT json_extract(value, '$.eventid'), json_extract(value, '$.attempt'), json_extract(value, '$.outcome'),
				        json_extract(value, '$.code'), json_extract(value, '$.ms'), json_extract(value, '$.error'), ?2
				 FROM json_each(?1) ORDER BY key`,
			)
			.bind(rows, now),
		markStatement(db, rows, now),
	]);
}

/**
 * The marks of recordAttempts without the attempt rows: what the consumer
 * writes when logging the batch failed, so that a delivered event is not
 * taken for an unsent one and sent again by the sweep (issue 20 item 6).
 */
export async function markAttempted(db: D1Database, records: AttemptRecord[]): Promise<void> {
	if (records.length === 0) return;
	await markStatement(db, attemptsJson(records), nowIso()).run();
}

/** A `delivery_attempts` row. */
export interface AttemptRow {
	attemptid: number;
	attempt: number;
	outcome: AttemptOutcome;
	response_code: number | null;
	duration_ms: number;
	error: string | null;
	created_at: string;
}

/** An event's row with its attempt count and its latest attempt (all null when it has none). */
export type DeliveryRow = OutboxEventRow & {
	attempt_count: number;
	attemptid: number | null;
	attempt: number | null;
	outcome: AttemptOutcome | null;
	response_code: number | null;
	duration_ms: number | null;
	error: string | null;
	attempt_at: string | null;
};

const DELIVERY_SELECT = `
	SELECT e.*,
	       (SELECT COUNT(*) FROM delivery_attempts c WHERE c.eventid = e.eventid) AS attempt_count,
	       l.attemptid, l.attempt, l.outcome, l.response_code, l.duration_ms, l.error, l.created_at AS attempt_at
	FROM outbox_events e
	LEFT JOIN delivery_attempts l
	       ON l.attemptid = (SELECT MAX(m.attemptid) FROM delivery_attempts m WHERE m.eventid = e.eventid)`;

/** The app's most recent outbox events, newest first, with their latest attempt; `before`: the last eventid of the previous page. */
export async function deliveryRows(db: D1Database, appid: string, limit: number, before?: string): Promise<DeliveryRow[]> {
	const { results } = await db
		.prepare(
			`${DELIVERY_SELECT} WHERE e.appid = ?1
			 AND (?3 IS NULL OR (e.created_at, e.eventid) < (SELECT created_at, eventid FROM outbox_events WHERE eventid = ?3 AND appid = ?1))
			 ORDER BY e.created_at DESC, e.eventid DESC LIMIT ?2`,
		)
		.bind(appid, limit, before ?? null)
		.all<DeliveryRow>();
	return results;
}

/** One event of the app with every attempt, oldest first (one round trip); null when it is not that app's. */
export async function deliveryWithAttempts(
	db: D1Database,
	appid: string,
	eventid: string,
): Promise<{ row: DeliveryRow; attempts: AttemptRow[] } | null> {
	const [head, attempts] = await db.batch([
		db.prepare(`${DELIVERY_SELECT} WHERE e.eventid = ? AND e.appid = ?`).bind(eventid, appid),
		db.prepare("SELECT * FROM delivery_attempts WHERE eventid = ? ORDER BY attemptid").bind(eventid),
	]);
	const row = firstRowOf<DeliveryRow>(head);
	return row ? { row, attempts: rowsOf<AttemptRow>(attempts) } : null;
}
