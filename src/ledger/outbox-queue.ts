import type { ProjectionMessage } from "../db/projection-batch";
import type { OutboxEvent } from "../domain/outbox-event";
import { NEXT_OUTBOX_ID } from "./outbox-entries";
import type { TxContext } from "./transaction-types";

/**
 * What a transaction writes into the ledger's outbox (outbox.ts delivers it): a reward's projection, with the
 * event and another ledger's records that may ride in it, and webhook events. Kept apart from the delivery so
 * each stays a file one can read whole.
 */

/**
 * Records that reward `seq` must be (re)written to the D1 projection at `version` or later. `event` (the
 * `conversion.recorded` event of the transaction that created the reward) travels inside the entry instead of
 * in an entry of its own (issue 33: one row written and one deleted less per conversion); it leaves with the
 * projection, and the entry goes only once the event went too (outbox-entries.ts, deleteAcked). A later change
 * raises the version and keeps the event. `carried`: another ledger's records riding with the event (carried-records.ts).
 */
export function queueProjection(
	sql: SqlStorage,
	seq: number,
	version: number,
	nowMs: number,
	event?: OutboxEvent,
	carried?: ProjectionMessage,
): void {
	// One entry per reward: later changes raise its version instead of adding rows, and make it due now.
	sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, version, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'projection', ?, ?, ?, ?, ?)
		 ON CONFLICT (ref) DO UPDATE SET version = MAX(version, excluded.version), next_attempt_at = MIN(next_attempt_at, excluded.next_attempt_at),
		   payload = CASE WHEN payload ->> '$.event' IS NULL THEN excluded.payload ELSE payload END`,
		`projection:${seq}`,
		JSON.stringify(event ? { seq, event, ...(carried ? { carried } : {}) } : { seq }),
		version,
		nowMs,
		new Date(nowMs).toISOString(),
	);
}

/**
 * A reward's projection, queued now or, inside a grant that announces its conversion (`ctx.projections`),
 * collected until the grant knows its event (grant.ts), so the event rides in the same insert.
 */
export function queueProjectionOf(ctx: TxContext, seq: number, version: number): void {
	if (ctx.projections) ctx.projections.set(seq, Math.max(version, ctx.projections.get(seq) ?? 0));
	else queueProjection(ctx.sql, seq, version, ctx.nowMs);
}

/**
 * Queues a `conversion.recorded` event as a webhook entry of its own, for a grant that created no reward to carry
 * it (a replay: grant.ts), unless the event still waits inside a projection entry (queueProjection).
 */
export function queueConversionEvent(sql: SqlStorage, event: OutboxEvent, nowMs: number): void {
	if (sql.exec(`SELECT 1 FROM outbox WHERE kind = 'projection' AND payload ->> '$.event.eventid' = ?`, event.eventid).toArray().length > 0)
		return;
	queueWebhook(sql, event, nowMs);
}

/** Records a webhook event; an event id already queued is ignored. */
export function queueWebhook(sql: SqlStorage, event: OutboxEvent, nowMs: number): void {
	sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'webhook', ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		`webhook:${event.eventid}`,
		JSON.stringify(event),
		nowMs,
		new Date(nowMs).toISOString(),
	);
}
