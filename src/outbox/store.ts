import { breakersByApp, breakersLookup } from "../db/breakers";
import { nowIso } from "../domain/dates";
import type { BreakerState } from "./breaker";
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

/** What one consumer batch needs from D1, for the messages it names. */
export interface BatchLookup {
	/** Events whose message carries the event: only their delivery state is read. */
	carried: string[];
	/** Events known by id only: read whole. */
	byId: string[];
	/** Apps whose delivery settings are not cached. */
	appids: string[];
	/** Apps of the carried events (their breakers are read with the batch). */
	carriedApps: string[];
}

export interface BatchState {
	/** `delivered_at` (null: not yet) of every event row found, carried or not. */
	delivered: Map<string, string | null>;
	/** The rows of the `byId` events found. */
	rows: Map<string, OutboxRow>;
	/** Delivery settings of the apps asked for, and of the apps of the `byId` events; null when the app is gone. */
	apps: Map<string, DeliveryApp | null>;
	/** Circuit breakers (breaker.ts) of every app of the batch that has one; absent: never failed. */
	breakers: Map<string, BreakerState>;
}

const jsonList = (values: string[]) => JSON.stringify([...new Set(values)]);

/**
 * Everything a consumer batch reads, in ONE round trip (whatever its size):
 * the delivery state of the carried events, the rows of the others, and the
 * settings of the apps involved. Lists travel as one JSON parameter each.
 */
export async function loadBatchState(db: D1Database, lookup: BatchLookup): Promise<BatchState> {
	const [carried, rows, apps, breakers] = await db.batch([
		db
			.prepare("SELECT eventid, delivered_at FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?))")
			.bind(jsonList(lookup.carried)),
		db.prepare("SELECT * FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?))").bind(jsonList(lookup.byId)),
		db
			.prepare(
				`SELECT appid, webhookurl, webhook_secret, emailsender FROM apps
				 WHERE appid IN (SELECT value FROM json_each(?1))
				    OR appid IN (SELECT appid FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?2)))`,
			)
			.bind(jsonList(lookup.appids), jsonList(lookup.byId)),
		breakersLookup(db, jsonList(lookup.carriedApps), jsonList(lookup.byId)),
	]);
	const state: BatchState = { delivered: new Map(), rows: new Map(), apps: new Map(), breakers: breakersByApp(breakers?.results ?? []) };
	for (const r of (carried?.results ?? []) as { eventid: string; delivered_at: string | null }[])
		state.delivered.set(r.eventid, r.delivered_at);
	for (const r of (rows?.results ?? []) as OutboxRow[]) {
		state.rows.set(r.eventid, r);
		state.delivered.set(r.eventid, r.delivered_at);
	}
	for (const id of lookup.appids) state.apps.set(id, null);
	for (const a of (apps?.results ?? []) as {
		appid: string;
		webhookurl: string | null;
		webhook_secret: string | null;
		emailsender: string | null;
	}[]) {
		state.apps.set(a.appid, { webhookurl: a.webhookurl, webhookSecret: a.webhook_secret ?? "", emailsender: a.emailsender });
	}
	return state;
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
 * Logs the attempts of a batch in ONE round trip (one transaction): every
 * attempt row; every event handled is marked enqueued (it reached the queue,
 * so the sweep must leave it alone), and a delivered or skipped one also
 * delivered.
 */
export async function recordAttempts(db: D1Database, records: AttemptRecord[]): Promise<void> {
	if (records.length === 0) return;
	const now = nowIso();
	const rows = JSON.stringify(
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
	await db.batch([
		db
			.prepare(
				`INSERT INTO delivery_attempts (eventid, attempt, outcome, response_code, duration_ms, error, created_at)
				 SELECT json_extract(value, '$.eventid'), json_extract(value, '$.attempt'), json_extract(value, '$.outcome'),
				        json_extract(value, '$.code'), json_extract(value, '$.ms'), json_extract(value, '$.error'), ?2
				 FROM json_each(?1) ORDER BY key`,
			)
			.bind(rows, now),
		db
			.prepare(
				`UPDATE outbox_events SET enqueued_at = COALESCE(enqueued_at, ?2),
				   delivered_at = CASE WHEN EXISTS (SELECT 1 FROM json_each(?1) WHERE json_extract(value, '$.eventid') = outbox_events.eventid
				     AND json_extract(value, '$.done') = 1) THEN COALESCE(delivered_at, ?2) ELSE delivered_at END
				 WHERE eventid IN (SELECT json_extract(value, '$.eventid') FROM json_each(?1))`,
			)
			.bind(rows, now),
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
