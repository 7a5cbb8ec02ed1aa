import type { EventInput } from "./events";
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
