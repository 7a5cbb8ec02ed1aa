import type { BreakerState, DeliveryApp } from "../domain/delivery";
import type { OutboxEvent } from "../domain/outbox-event";
import { type AuditEntry, runAudited } from "./audit";
import { breakersByApp, breakersLookup } from "./breakers";
import { rowsOf } from "./rows";

/**
 * The D1 outbox (`outbox_events`): webhook and email events recorded in the
 * same batch as the change that caused them, then handed to the queue
 * (src/outbox/). Their delivery attempts are in delivery-attempts.ts.
 */

/** An `outbox_events` row as stored: a webhook or an email event. `payload` is JSON text. */
export interface OutboxEventRow {
	eventid: string;
	appid: string;
	kind: string;
	type: string;
	payload: string;
	created_at: string;
	enqueued_at: string | null;
	delivered_at: string | null;
	/** When the consumer logged the event's first attempt; null while none was logged (migration 0011). */
	attempted_at?: string | null;
}

/** A SQL condition with its arguments, e.g. from `attributionHappened`. */
export interface SqlCondition {
	sql: string;
	args: unknown[];
}

/**
 * The statement that records an event in the D1 outbox. Put it in the same
 * `batch()` as the change that caused it; with `onlyIf`, the event is recorded
 * only when that condition holds inside the batch (the change took effect).
 * An event id already recorded is ignored, so replaying a change records
 * nothing twice.
 */
export function insertOutboxEvent(
	db: D1Database,
	event: OutboxEvent,
	onlyIf?: SqlCondition,
	options: { enqueuedAt?: string } = {},
): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO outbox_events (eventid, appid, kind, type, payload, created_at, enqueued_at)
			 SELECT ?, ?, ?, ?, ?, ?, ? WHERE ${onlyIf?.sql ?? "1"}
			 ON CONFLICT (eventid) DO NOTHING`,
		)
		.bind(
			event.eventid,
			event.appid,
			event.kind,
			event.type,
			JSON.stringify(event.payload),
			event.createdAt,
			options.enqueuedAt ?? null,
			...(onlyIf?.args ?? []),
		);
}

/** Records one event on its own (not part of a change's batch); true when this call recorded it. */
export async function recordOutboxEvent(db: D1Database, event: OutboxEvent, onlyIf?: SqlCondition): Promise<boolean> {
	const result = await insertOutboxEvent(db, event, onlyIf).run();
	return result.meta.changes === 1;
}

/**
 * True inside a batch when the app has a webhook URL. Webhook events of an
 * app without one are not recorded at all (docs/webhooks.md): nothing would
 * be sent, and recording them cost D1 writes and queue work per change.
 */
export const appHasWebhook = (appid: string): SqlCondition => ({
	sql: "EXISTS (SELECT 1 FROM apps WHERE appid = ? AND webhookurl IS NOT NULL AND webhookurl <> '')",
	args: [appid],
});

/** Both conditions. */
export const allOf = (...conditions: (SqlCondition | undefined)[]): SqlCondition => {
	const present = conditions.filter((c): c is SqlCondition => c !== undefined);
	return { sql: present.map((c) => `(${c.sql})`).join(" AND ") || "1", args: present.flatMap((c) => c.args) };
};

/** Marks events handed to the queue, unless already marked. At most ~90 ids: D1 binds at most 100 parameters per statement. */
export async function markEnqueued(db: D1Database, eventids: string[], at: string): Promise<void> {
	const placeholders = eventids.map(() => "?").join(", ");
	await db
		.prepare(`UPDATE outbox_events SET enqueued_at = ? WHERE eventid IN (${placeholders}) AND enqueued_at IS NULL`)
		.bind(at, ...eventids)
		.run();
}

/**
 * Ids of events recorded before `cutoff` that never reached the queue and
 * are not delivered, oldest first (the `outbox_pending` partial index).
 */
export async function pendingEventIds(db: D1Database, cutoff: string, limit: number): Promise<string[]> {
	const { results } = await db
		.prepare(
			"SELECT eventid FROM outbox_events WHERE enqueued_at IS NULL AND created_at < ? AND delivered_at IS NULL ORDER BY created_at LIMIT ?",
		)
		.bind(cutoff, limit)
		.all<{ eventid: string }>();
	return results.map((r) => r.eventid);
}

/**
 * Claims, in one statement, up to `limit` events handed to the queue before
 * `cutoff` that were never attempted and are not delivered (their message was
 * lost: a queue restart, a crash), oldest first, through the
 * `outbox_unattempted` partial index. Claiming sets `enqueued_at` to `at`, so
 * an event is re-sent at most once per staleness window however many sweeps
 * run at once (a statement is atomic in D1). Returns the claimed ids.
 */
export async function claimUnattemptedEvents(db: D1Database, cutoff: string, at: string, limit: number): Promise<string[]> {
	const { results } = await db
		.prepare(
			`UPDATE outbox_events SET enqueued_at = ?1
			 WHERE eventid IN (SELECT eventid FROM outbox_events
			                   WHERE enqueued_at IS NOT NULL AND enqueued_at < ?2 AND attempted_at IS NULL AND delivered_at IS NULL
			                   ORDER BY enqueued_at LIMIT ?3)
			 RETURNING eventid`,
		)
		.bind(at, cutoff, limit)
		.all<{ eventid: string }>();
	return results.map((r) => r.eventid);
}

/**
 * Clears `delivered_at` so the event goes out again; false when it is not that
 * app's event. It counts as enqueued now and unattempted, so a redelivery
 * whose message is lost is re-sent by the sweep like any other.
 */
export async function resetForRedelivery(db: D1Database, appid: string, eventid: string, at: string, audit: AuditEntry): Promise<boolean> {
	const reset = db
		.prepare("UPDATE outbox_events SET delivered_at = NULL, attempted_at = NULL, enqueued_at = ? WHERE eventid = ? AND appid = ?")
		.bind(at, eventid, appid);
	const result = await runAudited(db, reset, audit);
	return result.meta.changes > 0;
}

/** Leaves an event to the outbox sweep (its queue send failed). */
export async function markNotEnqueued(db: D1Database, eventid: string): Promise<void> {
	await db.prepare("UPDATE outbox_events SET enqueued_at = NULL WHERE eventid = ?").bind(eventid).run();
}

/** What one consumer batch needs from D1, for the messages it names. */
export interface BatchLookup {
	/** Events whose message carries the event: their delivery state and current payload are read. */
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
	/** The stored payload of every carried event found: what is delivered (an erasure may have redacted it since the send). */
	payloads: Map<string, string>;
	/** The rows of the `byId` events found. */
	rows: Map<string, OutboxEventRow>;
	/** Delivery settings of the apps asked for, and of the apps of the `byId` events; null when the app is gone. */
	apps: Map<string, DeliveryApp | null>;
	/** Circuit breakers (outbox/breaker.ts) of every app of the batch that has one; absent: never failed. */
	breakers: Map<string, BreakerState>;
}

interface DeliveryAppRow {
	appid: string;
	webhookurl: string | null;
	webhook_secret: string | null;
	emailsender: string | null;
	live_appid: string | null;
}

const jsonList = (values: string[]) => JSON.stringify([...new Set(values)]);

/**
 * Everything a consumer batch reads, in ONE round trip (whatever its size):
 * the delivery state and stored payload of the carried events, the rows of
 * the others, and the settings of the apps involved. Lists travel as one
 * JSON parameter each.
 */
export async function loadBatchState(db: D1Database, lookup: BatchLookup): Promise<BatchState> {
	const [carried, rows, apps, breakers] = await db.batch([
		db
			.prepare("SELECT eventid, delivered_at, payload FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?))")
			.bind(jsonList(lookup.carried)),
		db.prepare("SELECT * FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?))").bind(jsonList(lookup.byId)),
		db
			.prepare(
				`SELECT appid, webhookurl, webhook_secret, emailsender, live_appid FROM apps
				 WHERE appid IN (SELECT value FROM json_each(?1))
				    OR appid IN (SELECT appid FROM outbox_events WHERE eventid IN (SELECT value FROM json_each(?2)))`,
			)
			.bind(jsonList(lookup.appids), jsonList(lookup.byId)),
		breakersLookup(db, jsonList(lookup.carriedApps), jsonList(lookup.byId)),
	]);
	const state: BatchState = {
		delivered: new Map(),
		payloads: new Map(),
		rows: new Map(),
		apps: new Map(),
		breakers: breakersByApp(breakers),
	};
	for (const r of rowsOf<Pick<OutboxEventRow, "eventid" | "delivered_at" | "payload">>(carried)) {
		state.delivered.set(r.eventid, r.delivered_at);
		state.payloads.set(r.eventid, r.payload);
	}
	for (const r of rowsOf<OutboxEventRow>(rows)) {
		state.rows.set(r.eventid, r);
		state.delivered.set(r.eventid, r.delivered_at);
	}
	// Every app asked for, by id or through a byId event, is answered: its settings, or null when D1 has no such app.
	for (const id of lookup.appids) state.apps.set(id, null);
	for (const r of state.rows.values()) state.apps.set(r.appid, null);
	for (const a of rowsOf<DeliveryAppRow>(apps)) {
		state.apps.set(a.appid, {
			webhookurl: a.webhookurl,
			webhookSecret: a.webhook_secret ?? "",
			emailsender: a.emailsender,
			livemode: a.live_appid === null,
		});
	}
	return state;
}
