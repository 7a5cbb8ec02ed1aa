/**
 * Unique share-link clicks (migration 0009): one row per (code, client) says
 * when that client's click last counted. A click's D1 batch starts with
 * `markClick`; the counters and the click log that follow are guarded by
 * `MARK_WON`, so they count only when this click inserted the row or took over
 * one older than the window. One round trip, one primary-key upsert; repeats
 * write nothing else.
 */

/** What the guarded statements of one click need: the client, and this click's random token (null: no client, always counts). */
export interface ClickMark {
	clientkey: string | null;
	token: string;
}

/**
 * SQL guard, for statements whose ?1 is the referral code and whose two
 * parameters named here are the mark's clientkey and token: true when there is
 * no client to match, or when this click's token holds the client's row.
 */
export const markWon = (clientkeyParam: string, tokenParam: string) =>
	`(${clientkeyParam} IS NULL OR EXISTS (SELECT 1 FROM link_click_seen WHERE referralcode = ?1 AND clientkey = ${clientkeyParam} AND token = ${tokenParam}))`;

/**
 * Takes the client's row for this click when there is none or its counted
 * click is older than `windowMs`; a repeat inside the window changes nothing.
 * Only for a live code (as the counters). Null when the click has no client.
 */
export function markClick(db: D1Database, code: string, mark: ClickMark, now: Date, windowMs: number): D1PreparedStatement | null {
	if (!mark.clientkey) return null;
	const cutoff = new Date(now.getTime() - windowMs).toISOString();
	return db
		.prepare(
			`INSERT INTO link_click_seen (referralcode, clientkey, counted_at, token)
			 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)
			 ON CONFLICT (referralcode, clientkey) DO UPDATE SET counted_at = excluded.counted_at, token = excluded.token
			 WHERE link_click_seen.counted_at <= ?5`,
		)
		.bind(code, mark.clientkey, now.toISOString(), mark.token, cutoff);
}

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
