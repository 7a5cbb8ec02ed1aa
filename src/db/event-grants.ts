import type { OutboxEvent } from "../domain/outbox-event";
import { type EventInput, recordedEventOf, recordedEventStatements } from "./events";
import { rowsOf } from "./rows";

/**
 * Which recorded conversions still wait for their grants (migration 0012):
 * the event is inserted with `grants_pending = 1`, the ledger that announces
 * it clears the mark in its outbox flush, and the scheduled completion pass
 * (operations/conversion-completion.ts) finds what is left.
 */

/** Clears the mark of event `customid`: every grant of its decision was confirmed (put in the announcing ledger's flush batch). */
export function grantsConfirmed(db: D1Database, appid: string, customid: string): D1PreparedStatement {
	return db
		.prepare("UPDATE conversion_events SET grants_pending = NULL WHERE appid = ? AND customid = ? AND grants_pending IS NOT NULL")
		.bind(appid, customid);
}

/** What a completion pass learned of an event: its grants can never run (refused), or they failed this time. */
export interface PassOutcome {
	appid: string;
	customid: string;
	refused: boolean;
}

/** Marks a completion pass's refused events confirmed and counts one more failure for the others, in one batch. */
export async function markPassOutcomes(db: D1Database, outcomes: PassOutcome[]): Promise<void> {
	if (outcomes.length === 0) return;
	await db.batch(outcomes.map((o) => (o.refused ? grantsConfirmed : grantsFailed)(db, o.appid, o.customid)));
}

/**
 * Counts one more failed completion pass for event `customid` (migration 0039): an event that keeps failing sinks
 * behind events that never failed, so the pass's bounded take is not spent on it alone.
 */
export function grantsFailed(db: D1Database, appid: string, customid: string): D1PreparedStatement {
	return db
		.prepare(
			"UPDATE conversion_events SET grants_pending = grants_pending + 1 WHERE appid = ? AND customid = ? AND grants_pending IS NOT NULL",
		)
		.bind(appid, customid);
}

type PendingRow = Omit<EventInput, "campaignid"> & { campaignid: number };

/**
 * Events recorded before `cutoff` whose grants were never confirmed, those
 * that failed in the fewest passes first and then the oldest, at most `limit`
 * (the partial index of events in flight, which holds only these, read in its
 * order; the events it skips are those recorded since `cutoff`, a minute's
 * worth at most, whose own requests are still confirming them), with what
 * recording them again needs.
 */
export async function eventsAwaitingGrants(db: D1Database, cutoff: string, limit: number): Promise<PendingRow[]> {
	const result = await db
		.prepare(
			`SELECT e.appid, u.userkey, e.customid, e.eventname, e.transactionvalue, e.extrainfo, e.campaignid, e.growthhack,
			        e.productid, e.category
			 FROM conversion_events e JOIN users u ON u.userid = e.userid
			 WHERE e.grants_pending IS NOT NULL AND e.created_at < ? ORDER BY e.grants_pending, e.created_at LIMIT ?`,
		)
		.bind(cutoff, limit)
		.all();
	return rowsOf<PendingRow>(result);
}

/**
 * Which of `events` D1 holds (their rows came through the projection, so their grants were done: ledger/event-gate.ts),
 * as `appid \0 customid` keys: one read, a seek of the (appid, customid) key per event.
 */
export async function recordedAmong(db: D1Database, events: { appid: string; customid: string }[]): Promise<Set<string>> {
	if (events.length === 0) return new Set();
	const byApp = new Map<string, string[]>();
	for (const e of events) byApp.set(e.appid, [...(byApp.get(e.appid) ?? []), e.customid]);
	// D1 binds at most 100 parameters per statement: the app and up to 90 customids each.
	const chunks = [...byApp].flatMap(([appid, customids]) =>
		Array.from({ length: Math.ceil(customids.length / 90) }, (_, i) => ({ appid, customids: customids.slice(i * 90, i * 90 + 90) })),
	);
	const results = await db.batch(
		chunks.map(({ appid, customids }) =>
			db
				.prepare(`SELECT appid, customid FROM conversion_events WHERE appid = ? AND customid IN (${customids.map(() => "?").join(", ")})`)
				.bind(appid, ...customids),
		),
	);
	return new Set(results.flatMap((r) => rowsOf<{ appid: string; customid: string }>(r).map((row) => `${row.appid}\u0000${row.customid}`)));
}

/**
 * The statements a flush adds for the `conversion.recorded` events among `events`: D1's copy of each event
 * (recordedEventStatements, issue 49: its row now follows the projection, not the request), and the mark of an event
 * recorded in D1 before the gates cleared, as before. The announcing ledger writes the event only once every grant of
 * the conversion was done, so both say the same: its grants are confirmed.
 */
export function announcedStatements(db: D1Database, appid: string, events: OutboxEvent[]): D1PreparedStatement[] {
	const statements: D1PreparedStatement[] = [];
	for (const event of events) {
		if (event.type !== "conversion.recorded") continue;
		const recorded = recordedEventOf(event.payload);
		if (recorded) statements.push(...recordedEventStatements(db, appid, recorded));
		const customid = event.payload.customid;
		if (typeof customid === "string") statements.push(grantsConfirmed(db, appid, customid));
	}
	return statements;
}
