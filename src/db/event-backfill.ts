import { findStoredEventRows, type StoredEventWithApp } from "./events";

/**
 * The backfill of the event gates (issue 49, migration 0045): the events an
 * app recorded in D1 before the gates, read in pages of its (appid, customid)
 * key from where the last page ended, until the app is unmarked.
 */

/** One app still marked as having events from before the gates, with where its backfill stands (the partial index). */
export async function nextLegacyApp(db: D1Database): Promise<{ appid: string; cursor: string } | null> {
	const row = await db
		.prepare("SELECT appid, COALESCE(legacy_cursor, '') AS cursor FROM apps WHERE legacy_events = 1 ORDER BY appid LIMIT 1")
		.first<{ appid: string; cursor: string }>();
	return row ?? null;
}

/** Up to `limit` of the app's D1 events after customid `cursor`, in key order (a seek of its unique key). */
export function legacyEventsAfter(db: D1Database, appid: string, cursor: string, limit: number): Promise<StoredEventWithApp[]> {
	return findStoredEventRows(
		db.prepare(
			`SELECT e.*, u.userkey FROM conversion_events e JOIN users u ON u.userid = e.userid
			 WHERE e.appid = ?1 AND e.customid > ?2 ORDER BY e.customid LIMIT ?3`,
		),
		[appid, cursor, limit],
	);
}

/** Where the app's backfill stands (`done`: every event is in its gate: the mark goes, and a gate miss is the answer). */
export async function markBackfill(db: D1Database, appid: string, cursor: string, done: boolean): Promise<void> {
	const statement = done
		? db.prepare("UPDATE apps SET legacy_events = 0, legacy_cursor = NULL WHERE appid = ?").bind(appid)
		: db.prepare("UPDATE apps SET legacy_cursor = ?2 WHERE appid = ?1").bind(appid, cursor);
	await statement.run();
}
