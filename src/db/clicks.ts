import { slotOf } from "../domain/time-zone";
import { slotCounter } from "./stats";

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

/** Where a share link leads: the landing URL of the code's app (`codeKnown`), else of the app whose campaign uses `host`. */
export interface LinkTarget {
	codeKnown: boolean;
	landingurl: string | null;
}

/**
 * One round trip: the live owner of `code` and, for an unknown code, the app
 * whose campaign uses `host` as its custom domain. The click counter asks it
 * once per code and minute (clicks/click-counter.ts), not once per click.
 */
export async function findLinkTarget(db: D1Database, code: string, host: string): Promise<LinkTarget> {
	const [owner, domainApp] = await db.batch<{ landingurl: string | null }>([
		codeOwnerLookup(db, code),
		db.prepare("SELECT a.landingurl FROM campaigns c JOIN apps a ON a.appid = c.appid WHERE c.customdomain = ? LIMIT 1").bind(host),
	]);
	const known = owner?.results[0];
	return { codeKnown: known !== undefined, landingurl: known ? known.landingurl : (domainApp?.results[0]?.landingurl ?? null) };
}

/** What a click counter rolls up for one code and quarter hour: raw requests and counted (unique) clicks. */
export interface ClickTally {
	code: string;
	/** Any ISO time inside the quarter hour (its UTC day is the daily count's). */
	at: string;
	requests: number;
	clicks: number;
}

/** One counted click for the click log (IP hash and user agent, kept CLICK_RETENTION_DAYS). */
export interface ClickLogRow {
	code: string;
	at: string;
	iphash: string | null;
	useragent: string | null;
}

/** The live-owner guard of every roll-up statement (?1 is the code): an erased user's code counts nothing. */
const LIVE = "EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)";

/**
 * The statements that add a click counter's tallies and log rows to D1, for
 * ONE batch (one round trip, one transaction, however many codes): per code
 * and quarter hour the app's `requests` and `clicks` counters, per code and
 * UTC day the daily clicks, and one log row per counted click.
 */
export function clickRollUp(db: D1Database, tallies: ClickTally[], log: ClickLogRow[]): D1PreparedStatement[] {
	const statements: D1PreparedStatement[] = [];
	for (const t of tallies) {
		const slot = slotOf(t.at);
		if (t.requests > 0) statements.push(slotCounter(db, t.code, slot, "requests", t.requests));
		if (t.clicks > 0) {
			statements.push(slotCounter(db, t.code, slot, "clicks", t.clicks));
			statements.push(
				db
					.prepare(
						`INSERT INTO link_clicks (referralcode, day, clicks) SELECT ?1, ?2, ?3 WHERE ${LIVE}
						 ON CONFLICT (referralcode, day) DO UPDATE SET clicks = clicks + excluded.clicks`,
					)
					.bind(t.code, t.at.slice(0, 10), t.clicks),
			);
		}
	}
	for (const row of log) {
		statements.push(
			db
				.prepare(`INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent) SELECT ?1, ?2, ?3, ?4 WHERE ${LIVE}`)
				.bind(row.code, row.at, row.iphash, row.useragent),
		);
	}
	return statements;
}

/** Writes a roll-up in one round trip (nothing when there is nothing to add). */
export async function writeClickRollUp(db: D1Database, tallies: ClickTally[], log: ClickLogRow[]): Promise<void> {
	const statements = clickRollUp(db, tallies, log);
	if (statements.length > 0) await db.batch(statements);
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
