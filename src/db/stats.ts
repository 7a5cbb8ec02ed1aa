import { fromHundredths } from "../rewards/money";
import { rowsOf } from "./rows";
import { type ClickMark, markWon } from "./unique-clicks";

/**
 * Daily counters of the dashboard's analytics (migration 0006). Each hook is
 * one statement (or two) batched into the D1 transaction of the change it
 * counts, and guarded by that change, so a retried or refused call counts
 * nothing and a counted change is never missed.
 */

const BUMP = "ON CONFLICT (appid, day, campaignid, metric, unit) DO UPDATE SET value = value + excluded.value";

/** register / invokeoutreach: counts the user `userkey` (and its referral) only if this batch inserted it. */
export function signupCounters(db: D1Database, userkey: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
			 SELECT appid, campaignid, substr(created_at, 1, 10), 'signups', '', 1 FROM users WHERE userkey = ?1
			 UNION ALL
			 SELECT appid, campaignid, substr(created_at, 1, 10), 'referred_signups', '', 1 FROM users
			 WHERE userkey = ?1 AND referrer_userid IS NOT NULL ${BUMP}`,
		)
		.bind(userkey);
}

/** setreferrer: a user attributed after registering counts as a referred signup on the day of the attribution `attributionId`. */
export function lateAttributionCounter(db: D1Database, attributionId: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
			 SELECT appid, campaignid, substr(attributed_at, 1, 10), 'referred_signups', '', 1 FROM users WHERE attribution_id = ?1 ${BUMP}`,
		)
		.bind(attributionId);
}

/** A share-link click on `code` (UTC `day`), counted on the code owner's app and campaign when it is the client's first in the window. */
export function clickCounter(db: D1Database, code: string, day: string, mark: ClickMark): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
			 SELECT appid, campaignid, ?2, 'clicks', '', 1 FROM users WHERE referralcode = ?1 AND ${markWon("?3", "?4")} ${BUMP}`,
		)
		.bind(code, day, mark.clientkey, mark.token);
}

/** Any share-link request on `code` (bots, HEAD and repeats included): the raw `requests` next to the unique `clicks`. */
export function requestCounter(db: D1Database, code: string, day: string): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
			 SELECT appid, campaignid, ?2, 'requests', '', 1 FROM users WHERE referralcode = ?1 ${BUMP}`,
		)
		.bind(code, day);
}

/** A friend's move to Converted, only when the conversion `conversionId` happened in this batch. */
export function conversionCounters(db: D1Database, conversionId: string): D1PreparedStatement[] {
	return [
		db
			.prepare(
				`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
				 SELECT appid, campaignid, substr(updated_at, 1, 10), 'conversions', '', 1 FROM users WHERE conversion_id = ?1 ${BUMP}`,
			)
			.bind(conversionId),
		db
			.prepare(
				`INSERT INTO stats_referrer_daily (appid, day, referrer_userid, campaignid, conversions)
				 SELECT appid, substr(updated_at, 1, 10), referrer_userid, campaignid, 1 FROM users WHERE conversion_id = ?1
				 ON CONFLICT (appid, day, referrer_userid, campaignid) DO UPDATE SET conversions = conversions + 1`,
			)
			.bind(conversionId),
	];
}

/** What the projection flush knows of a reward (the ledger's row; amounts in hundredths). */
export interface ProjectedReward {
	seq: number;
	campaignid: number;
	rewardunit: string;
	amount: number;
	redeemed: number;
	version: number;
	created_at: string;
	updated_at: string;
}

/**
 * Batched just BEFORE the reward's projection upsert: counts the reward when
 * the projection does not hold it yet, and the redeemed amount it gained
 * since the projected version. A replayed or stale flush counts nothing.
 */
export function rewardCounters(db: D1Database, appid: string, userkey: string, row: ProjectedReward): D1PreparedStatement {
	const rewarddtlid = `${userkey}-${row.seq}`;
	const isNew = "NOT EXISTS (SELECT 1 FROM rewards WHERE rewarddtlid = ?1)";
	const gained = "(?7 - COALESCE((SELECT redeemed FROM rewards WHERE rewarddtlid = ?1), 0))";
	return db
		.prepare(
			`INSERT INTO stats_daily (appid, campaignid, day, metric, unit, value)
			 SELECT ?2, ?3, ?4, 'rewards_created', '', 1 WHERE ${isNew}
			 UNION ALL SELECT ?2, ?3, ?4, 'reward_amount', ?5, ?6 WHERE ${isNew}
			 UNION ALL SELECT ?2, ?3, ?8, 'redeemed', ?5, ${gained}
			 WHERE ${gained} <> 0 AND ?9 > COALESCE((SELECT version FROM rewards WHERE rewarddtlid = ?1), -1) ${BUMP}`,
		)
		.bind(
			rewarddtlid,
			appid,
			row.campaignid,
			row.created_at.slice(0, 10),
			row.rewardunit,
			fromHundredths(row.amount),
			fromHundredths(row.redeemed),
			row.updated_at.slice(0, 10),
			row.version,
		);
}

export interface StatsQuery {
	appid: string;
	campaignid: number | null;
	/** Inclusive UTC days, YYYY-MM-DD. */
	from: string;
	to: string;
}

export interface StatsCell {
	day: string;
	metric: string;
	unit: string;
	value: number;
}

export interface TopReferrer {
	userkey: string;
	email: string | null;
	name: string | null;
	referralcode: string;
	conversions: number;
}

/** The counters of a range and its top referrers: one D1 round trip, two indexed range reads. */
export async function readStats(db: D1Database, q: StatsQuery): Promise<{ cells: StatsCell[]; top: TopReferrer[] }> {
	const [cells, top] = await db.batch([
		db
			.prepare(
				`SELECT day, metric, unit, SUM(value) AS value FROM stats_daily
				 WHERE appid = ?1 AND day >= ?2 AND day <= ?3 AND (?4 IS NULL OR campaignid = ?4)
				 GROUP BY day, metric, unit ORDER BY day`,
			)
			.bind(q.appid, q.from, q.to, q.campaignid),
		db
			.prepare(
				`SELECT u.userkey, u.email, u.name, u.referralcode, t.conversions FROM (
				   SELECT referrer_userid, SUM(conversions) AS conversions FROM stats_referrer_daily
				   WHERE appid = ?1 AND day >= ?2 AND day <= ?3 AND (?4 IS NULL OR campaignid = ?4)
				   GROUP BY referrer_userid ORDER BY conversions DESC, referrer_userid LIMIT 10
				 ) t JOIN users u ON u.userid = t.referrer_userid ORDER BY t.conversions DESC, u.userid`,
			)
			.bind(q.appid, q.from, q.to, q.campaignid),
	]);
	return {
		cells: rowsOf<StatsCell>(cells),
		top: rowsOf<TopReferrer>(top),
	};
}
