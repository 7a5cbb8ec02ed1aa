import { clickCounter, requestCounter } from "./stats";
import { type ClickMark, markClick, markWon } from "./unique-clicks";

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

/** Counts a click on a live code for its UTC day, if it is the client's first in the window (`mark`, db/unique-clicks.ts). */
function countClick(db: D1Database, code: string, day: string, mark: ClickMark): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO link_clicks (referralcode, day, clicks) SELECT ?1, ?2, 1 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)
			 AND ${markWon("?3", "?4")}
			 ON CONFLICT (referralcode, day) DO UPDATE SET clicks = clicks + 1`,
		)
		.bind(code, day, mark.clientkey, mark.token);
}

/** Records one counted click on a live code (repeats in the window are not logged again). */
function logClick(
	db: D1Database,
	code: string,
	at: string,
	iphash: string | null,
	useragent: string | null,
	mark: ClickMark,
): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent)
			 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE referralcode = ?1 AND erased_at IS NULL)
			 AND ${markWon("?5", "?6")}`,
		)
		.bind(code, at, iphash, useragent, mark.clientkey, mark.token);
}

/**
 * The statements of a person's click on `code` at `at`, for the request's one
 * batch: the client's mark (when the client is known), then the daily count,
 * the app's stats and the click log, each counting only when the mark was won
 * (a repeat within `windowMs` writes nothing but its failed upsert).
 */
function uniqueClick(
	db: D1Database,
	click: { code: string; at: Date; iphash: string | null; useragent: string | null; mark: ClickMark; windowMs: number },
): D1PreparedStatement[] {
	const { code, at, iphash, useragent, mark } = click;
	const now = at.toISOString();
	const day = now.slice(0, 10);
	const claim = markClick(db, code, mark, at, click.windowMs);
	return [
		...(claim ? [claim] : []),
		countClick(db, code, day, mark),
		clickCounter(db, code, now, mark),
		logClick(db, code, now, iphash, useragent, mark),
	];
}

/** A person's click, with what makes it unique: the client's mark (db/unique-clicks.ts) and the window. */
export interface PersonClick {
	iphash: string | null;
	useragent: string | null;
	mark: ClickMark;
	windowMs: number;
}

/**
 * One request of a share link, in ONE round trip: the code's app, the custom
 * domain's app (for unknown codes), the raw request count and, for a person's
 * click (`click` not null), the unique click. Answers where it leads: the
 * landing URL of the code's app, else of the app whose campaign uses `host` as
 * its custom domain; null when neither has one. `codeKnown`: the code is a
 * live user's.
 */
export async function recordLinkRequest(
	db: D1Database,
	request: { code: string; host: string; at: Date; click: PersonClick | null },
): Promise<{ codeKnown: boolean; landingurl: string | null }> {
	const { code, host, at, click } = request;
	const [owner, domainApp] = await db.batch<{ landingurl: string | null }>([
		codeOwnerLookup(db, code),
		db.prepare("SELECT a.landingurl FROM campaigns c JOIN apps a ON a.appid = c.appid WHERE c.customdomain = ? LIMIT 1").bind(host),
		requestCounter(db, code, at.toISOString()),
		...(click ? uniqueClick(db, { code, at, ...click }) : []),
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
