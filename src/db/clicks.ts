import { clickCounter } from "./stats";

/**
 * Share-link clicks: the daily counter per code (link_clicks, kept for good)
 * and one row per click (link_click_log, kept CLICK_RETENTION_DAYS) with the
 * clicker's IP hash and user agent, so a reviewer can see a referrer clicking
 * their own link.
 */

/** Per-click rows older than this are deleted by the scheduled clean-up; the daily counts stay. */
export const CLICK_RETENTION_DAYS = 30;

/** The live (not erased) owner of a code, with its app's landing URL. */
function codeOwnerLookup(db: D1Database, code: string): D1PreparedStatement {
	return db
		.prepare("SELECT a.landingurl FROM users u JOIN apps a ON a.appid = u.appid WHERE u.referralcode = ? AND u.erased_at IS NULL")
		.bind(code);
}

/** Counts a click on a live code for its UTC day. */
function countClick(db: D1Database, code: string, day: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO link_clicks (referralcode, day, clicks) SELECT ?1, ?2, 1 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)
			 ON CONFLICT (referralcode, day) DO UPDATE SET clicks = clicks + 1`,
		)
		.bind(code, day);
}

/** Records one click on a live code. */
function logClick(db: D1Database, code: string, at: string, iphash: string | null, useragent: string | null): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent)
			 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)`,
		)
		.bind(code, at, iphash, useragent);
}

/** One click on a share link: the code, the host it came to, when, and who clicked (IP hash of its network, user agent). */
export interface Click {
	code: string;
	host: string;
	at: string;
	iphash: string | null;
	useragent: string | null;
}

/**
 * Counts and logs a click in one round trip, and answers where it leads: the
 * landing URL of the code's app, else (an unknown code) of the app whose
 * campaign uses `host` as its custom domain; null when neither has one.
 * `codeKnown`: the code is a live user's.
 */
export async function recordClick(db: D1Database, click: Click): Promise<{ codeKnown: boolean; landingurl: string | null }> {
	const day = click.at.slice(0, 10);
	const [owner, domainApp] = await db.batch<{ landingurl: string | null }>([
		codeOwnerLookup(db, click.code),
		db.prepare("SELECT a.landingurl FROM campaigns c JOIN apps a ON a.appid = c.appid WHERE c.customdomain = ? LIMIT 1").bind(click.host),
		countClick(db, click.code, day),
		clickCounter(db, click.code, day),
		logClick(db, click.code, click.at, click.iphash, click.useragent),
	]);
	const known = owner?.results[0];
	return { codeKnown: known !== undefined, landingurl: known ? known.landingurl : (domainApp?.results[0]?.landingurl ?? null) };
}

/** Deletes per-click rows older than the retention; returns how many. Bounded per call so one run never holds D1 long. */
export async function purgeOldClicks(db: D1Database, now: Date, limit = 10_000): Promise<number> {
	const cutoff = new Date(now.getTime() - CLICK_RETENTION_DAYS * 86_400_000).toISOString();
	const result = await db
		.prepare("DELETE FROM link_click_log WHERE clickid IN (SELECT clickid FROM link_click_log WHERE clicked_at < ? LIMIT ?)")
		.bind(cutoff, limit)
		.run();
	return result.meta.changes;
}
