/**
 * How long the D1 outbox keeps what it delivered: a delivered event (webhook
 * or email) and its delivery attempts are deleted this many days after its
 * delivery, by the scheduled clean-up (src/cleanup.ts). Events not delivered
 * (still retrying, or given up on) stay for the admin API and the sweep.
 */
export const DELIVERED_RETENTION_DAYS = 30;

/**
 * Deletes at most `limit` events delivered before `cutoff` (oldest first,
 * through the outbox_delivered index) with all their attempts, in one batch
 * (a transaction): the attempts first, as they reference the events. Both
 * statements pick the same events, since nothing changes between them.
 * Returns how many events went (their attempts went with them).
 */
export async function deleteDeliveredEvents(db: D1Database, cutoff: string, limit: number): Promise<number> {
	const due = "SELECT eventid FROM outbox_events WHERE delivered_at < ?1 ORDER BY delivered_at LIMIT ?2";
	const [, events] = await db.batch([
		db.prepare(`DELETE FROM delivery_attempts WHERE eventid IN (${due})`).bind(cutoff, limit),
		db.prepare(`DELETE FROM outbox_events WHERE eventid IN (${due})`).bind(cutoff, limit),
	]);
	return events?.meta.changes ?? 0;
}
