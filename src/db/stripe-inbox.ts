import { z } from "zod";

/**
 * Stripe's events as received (migration 0018, docs/stripe.md "Order and
 * crashes"): stored before the endpoint answers 2xx, handed to the Stripe
 * queue, marked done by the consumer once applied or refused for good. The
 * sweep sends again what is not done after a while (a message lost in a
 * crash); a refund whose payment is not known yet waits (`waits_for`) until
 * that payment is recorded.
 */

export interface InboxEvent {
	appid: string;
	eventid: string;
	type: string;
	/** JSON of the fields the mapping reads. */
	object: string;
}

const doneRow = z.object({ done_at: z.number().nullable() });

/** Stores an event once (a redelivery by Stripe keeps the first); true when it is new or still not done. */
export async function storeInboxEvent(db: D1Database, event: InboxEvent, now: number): Promise<boolean> {
	const [, row] = await db.batch([
		db
			.prepare(
				`INSERT INTO stripe_inbox (appid, eventid, type, object, received_at, sent_at) VALUES (?, ?, ?, ?, ?, ?)
				 ON CONFLICT (appid, eventid) DO NOTHING`,
			)
			.bind(event.appid, event.eventid, event.type, event.object, now, now),
		db.prepare("SELECT done_at FROM stripe_inbox WHERE appid = ? AND eventid = ?").bind(event.appid, event.eventid),
	]);
	const stored = doneRow.optional().parse(row?.results[0]);
	return (stored?.done_at ?? null) === null;
}

/** True when the event was already done (a redelivered message): its work is not run again. */
export async function inboxEventDone(db: D1Database, appid: string, eventid: string): Promise<boolean> {
	const row = await db
		.prepare("SELECT done_at FROM stripe_inbox WHERE appid = ? AND eventid = ?")
		.bind(appid, eventid)
		.first<{ done_at: number | null }>();
	return row?.done_at != null;
}

/**
 * Marks the event done with its outcome, and counts the outcome (one round trip). Its `object` is emptied: only an
 * event not done is read again (the sweep, a waiting refund), and the fields kept for the mapping may hold what a
 * payer typed (an email at checkout) that no erasure would reach.
 */
export async function finishInboxEvent(db: D1Database, appid: string, eventid: string, outcome: string, now: number): Promise<void> {
	await db.batch([
		db
			.prepare(
				"UPDATE stripe_inbox SET done_at = ?, outcome = ?, waits_for = NULL, object = '{}' WHERE appid = ? AND eventid = ? AND done_at IS NULL",
			)
			.bind(now, outcome, appid, eventid),
		db
			.prepare("INSERT INTO stripe_event_counts (appid, outcome, n) VALUES (?, ?, 1) ON CONFLICT (appid, outcome) DO UPDATE SET n = n + 1")
			.bind(appid, outcome),
	]);
}

/** A refund whose payment is not known yet: it waits for the payment's id `ref` (its payment intent, else its charge). */
export async function waitForPayment(db: D1Database, appid: string, eventid: string, ref: string): Promise<void> {
	await db
		.prepare("UPDATE stripe_inbox SET waits_for = ? WHERE appid = ? AND eventid = ? AND done_at IS NULL")
		.bind(ref, appid, eventid)
		.run();
}

const inboxRow = z.object({ appid: z.string(), eventid: z.string(), type: z.string(), object: z.string() });

/**
 * The refunds waiting for a payment with one of `refs` (its charge, payment
 * intent, invoice), released: they become open again (sent now), on the
 * index `stripe_inbox_waiting`. At most 100 per payment.
 */
export async function releaseWaitingRefunds(db: D1Database, appid: string, refs: string[], now: number): Promise<InboxEvent[]> {
	const ids = refs.filter((r) => r.length > 0);
	if (ids.length === 0) return [];
	const marks = ids.map(() => "?").join(", ");
	const result = await db
		.prepare(
			`UPDATE stripe_inbox SET waits_for = NULL, sent_at = ?
			 WHERE appid = ? AND done_at IS NULL AND waits_for IN (${marks})
			 RETURNING appid, eventid, type, object`,
		)
		.bind(now, appid, ...ids)
		.all();
	return result.results.slice(0, 100).map((r) => inboxRow.parse(r));
}

/**
 * Claims the events not done and sent before `before` (a lost message, a
 * crash between storing and sending): their `sent_at` moves to `now` in the
 * same statement, so concurrent sweeps send each once per window. Bounded,
 * on the index `stripe_inbox_open`.
 */
export async function claimStaleInboxEvents(db: D1Database, before: number, now: number, limit: number): Promise<InboxEvent[]> {
	const result = await db
		.prepare(
			`UPDATE stripe_inbox SET sent_at = ?
			 WHERE (appid, eventid) IN (
			   SELECT appid, eventid FROM stripe_inbox WHERE done_at IS NULL AND waits_for IS NULL AND sent_at <= ? ORDER BY sent_at LIMIT ?)
			 RETURNING appid, eventid, type, object`,
		)
		.bind(now, before, limit)
		.all();
	return result.results.map((r) => inboxRow.parse(r));
}

/**
 * Days a done event is kept: its row refuses Stripe's redeliveries of it (storeInboxEvent), and Stripe retries a
 * delivery for up to 3 days and resends no event older than 30 (docs/stripe.md, "Order, retries and crashes").
 */
export const INBOX_DONE_RETENTION_DAYS = 35;

/**
 * Deletes at most `limit` events done before `before` (epoch ms), oldest first, on the index stripe_inbox_done
 * (migration 0048); the daily job repeats it until none is due (cleanup.ts, drain). Returns how many went.
 */
export async function purgeDoneInboxEvents(db: D1Database, before: number, limit: number): Promise<number> {
	const result = await db
		.prepare(
			`DELETE FROM stripe_inbox WHERE (appid, eventid) IN (
			   SELECT appid, eventid FROM stripe_inbox WHERE done_at IS NOT NULL AND done_at <= ? ORDER BY done_at LIMIT ?)`,
		)
		.bind(before, limit)
		.run();
	return result.meta.changes ?? 0;
}
