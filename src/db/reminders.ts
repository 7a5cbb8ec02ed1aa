import { newEventId } from "../domain/ids";
import type { OutboxEvent } from "../domain/outbox-event";
import { insertOutboxEvent } from "./outbox-events";

/** `friend_reminders`: when each friend was last reminded (remindfriend). */

/**
 * Claims the right to remind the friend now, unless it was last reminded
 * after `cutoff`, and records the reminder email only if the claim held: a
 * guarded upsert and the event in one batch, so two calls at once cannot
 * both send. True when this call may send.
 */
export async function claimReminder(
	db: D1Database,
	friendUserid: number,
	email: OutboxEvent,
	now: string,
	cutoff: string,
): Promise<boolean> {
	// Names this claim inside the batch, so the event is recorded only when the upsert wrote it.
	const token = newEventId();
	const [claim] = await db.batch([
		db
			.prepare(
				`INSERT INTO friend_reminders (friend_userid, last_sent_at, token) VALUES (?1, ?2, ?3)
				 ON CONFLICT (friend_userid) DO UPDATE SET last_sent_at = ?2, token = ?3 WHERE friend_reminders.last_sent_at <= ?4`,
			)
			.bind(friendUserid, now, token, cutoff),
		insertOutboxEvent(db, email, { sql: "EXISTS (SELECT 1 FROM friend_reminders WHERE token = ?)", args: [token] }),
	]);
	return claim?.meta.changes === 1;
}
