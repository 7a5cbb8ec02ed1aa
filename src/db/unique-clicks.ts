/**
 * Unique share-link clicks were marked in D1 (migration 0009, link_click_seen)
 * until issue 33 moved the marks into the click counters (clicks/click-counter.ts):
 * a click writes nothing to D1 on its request path. The table is no longer
 * written; the every-minute job still empties what an older deploy left.
 */

/** Deletes rows whose window is over (they no longer hold a repeat back); bounded per call. Returns how many. */
export async function purgeClickMarks(db: D1Database, now: Date, windowMs: number, limit = 10_000): Promise<number> {
	const cutoff = new Date(now.getTime() - windowMs).toISOString();
	const result = await db
		.prepare(
			`DELETE FROM link_click_seen WHERE (referralcode, clientkey) IN
			 (SELECT referralcode, clientkey FROM link_click_seen WHERE counted_at < ? LIMIT ?)`,
		)
		.bind(cutoff, limit)
		.run();
	return result.meta.changes;
}
