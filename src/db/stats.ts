import { sumCounters } from "../domain/shard-merge";
import { localDayStart, type OffsetSegment, offsetSegments, slotOf } from "../domain/time-zone";
import { fromHundredths } from "../rewards/money";
import { onEveryShard } from "./fanout";
import { rowsOf } from "./rows";
import type { ShardPool } from "./shards";

/**
 * Counters of the dashboard's analytics, per UTC quarter hour (`stats_slots`,
 * migration 0014, so days can be counted in the app's time zone). Each hook
 * is one statement (or two) batched into the D1 transaction of the change it
 * counts, and guarded by that change, so a retried or refused call counts
 * nothing and a counted change is never missed.
 */

const BUMP = "ON CONFLICT (appid, slot, campaignid, metric, unit) DO UPDATE SET value = value + excluded.value";
const INTO = "INSERT INTO stats_slots (appid, campaignid, slot, metric, unit, value)";

/** SQL: the quarter-hour slot of an ISO timestamp column (as domain/time-zone.ts slotOf). */
const slotSql = (column: string) => `substr(${column}, 1, 14) || printf('%02d', (CAST(substr(${column}, 15, 2) AS INTEGER) / 15) * 15)`;

/** register / invokeoutreach: counts the user `userkey` (and its referral) only if this batch inserted it. */
export function signupCounters(db: D1Database, userkey: string): D1PreparedStatement {
	return db
		.prepare(
			`${INTO}
			 SELECT appid, campaignid, ${slotSql("created_at")}, 'signups', '', 1 FROM users WHERE userkey = ?1
			 UNION ALL
			 SELECT appid, campaignid, ${slotSql("created_at")}, 'referred_signups', '', 1 FROM users
			 WHERE userkey = ?1 AND referrer_userid IS NOT NULL ${BUMP}`,
		)
		.bind(userkey);
}

/** setreferrer: a user attributed after registering counts as a referred signup on the day of the attribution `attributionId`. */
export function lateAttributionCounter(db: D1Database, attributionId: string): D1PreparedStatement {
	return db
		.prepare(
			`${INTO}
			 SELECT appid, campaignid, ${slotSql("attributed_at")}, 'referred_signups', '', 1 FROM users WHERE attribution_id = ?1 ${BUMP}`,
		)
		.bind(attributionId);
}

/**
 * Share-link counts rolled up by a click counter (db/clicks.ts clickRollUp):
 * `n` raw `requests` or unique `clicks` of `code` in the quarter hour `slot`,
 * on the code owner's app and campaign.
 */
export function slotCounter(db: D1Database, code: string, slot: string, metric: "requests" | "clicks", n: number): D1PreparedStatement {
	return db
		.prepare(`${INTO} SELECT appid, campaignid, ?2, ?3, '', ?4 FROM users WHERE referralcode = ?1 ${BUMP}`)
		.bind(code, slot, metric, n);
}

/**
 * The friend that conversion `conversionId` moved to Converted in this very batch, found by its event's
 * (app, customid) key and checked by the token (?1 the token, ?2 the app, ?3 the customid): two key seeks, and no
 * index on the token (migration 0037).
 */
export const CONVERTED_FRIEND = "userid = (SELECT userid FROM conversion_events WHERE appid = ?2 AND customid = ?3) AND conversion_id = ?1";

/** A friend's move to Converted, only when the conversion `conversionId` happened in this batch. */
export function conversionCounters(db: D1Database, conversionId: string, appid: string, customid: string): D1PreparedStatement[] {
	return [
		db
			.prepare(
				`${INTO}
				 SELECT appid, campaignid, ${slotSql("updated_at")}, 'conversions', '', 1 FROM users WHERE ${CONVERTED_FRIEND} ${BUMP}`,
			)
			.bind(conversionId, appid, customid),
		db
			.prepare(
				`INSERT INTO stats_referrer_daily (appid, day, referrer_userid, campaignid, conversions)
				 SELECT appid, substr(updated_at, 1, 10), referrer_userid, campaignid, 1 FROM users WHERE ${CONVERTED_FRIEND}
				 ON CONFLICT (appid, day, referrer_userid, campaignid) DO UPDATE SET conversions = conversions + 1`,
			)
			.bind(conversionId, appid, customid),
	];
}

/** What the projection flush knows of a reward (the ledger's row; amounts in hundredths). */
export interface ProjectedReward {
	seq: number;
	campaignid: number;
	rewardunit: string;
	amount: number;
	/** What refunds took back (reversal.ts). */
	reversed: number;
	status: string;
	redeemed: number;
	version: number;
	created_at: string;
	updated_at: string;
}

/** What a reward has earned: its amount less what was reversed, nothing once Rejected (a full reversal rejects it too). */
const earned = (row: ProjectedReward) => (row.status === "Rejected" ? 0 : fromHundredths(row.amount - row.reversed));

/**
 * Batched just BEFORE the reward's projection upsert: counts the reward when
 * the projection does not hold it yet; moves the earned amount (on the
 * reward's creation slot) by what changed since the projected version, so a
 * rejection or a refund takes it back out; and counts the redeemed amount it
 * gained. A replayed or stale flush counts nothing.
 */
export function rewardCounters(db: D1Database, appid: string, userkey: string, row: ProjectedReward): D1PreparedStatement {
	const isNew = "NOT EXISTS (SELECT 1 FROM rewards WHERE rewarddtlid = ?1)";
	const newer = "?9 > COALESCE((SELECT version FROM rewards WHERE rewarddtlid = ?1), -1)";
	// The projection stores the reward's worth after refunds (db/projection.ts), so what it counted as earned is readable there.
	const gainedEarned =
		"(?6 - COALESCE((SELECT CASE WHEN rewardstatus = 'Rejected' THEN 0 ELSE reward END FROM rewards WHERE rewarddtlid = ?1), 0))";
	const gainedRedeemed = "(?7 - COALESCE((SELECT redeemed FROM rewards WHERE rewarddtlid = ?1), 0))";
	return db
		.prepare(
			`${INTO}
			 SELECT ?2, ?3, ?4, 'rewards_created', '', 1 WHERE ${isNew}
			 UNION ALL SELECT ?2, ?3, ?4, 'reward_amount', ?5, ${gainedEarned} WHERE ${gainedEarned} <> 0 AND ${newer}
			 UNION ALL SELECT ?2, ?3, ?8, 'redeemed', ?5, ${gainedRedeemed} WHERE ${gainedRedeemed} <> 0 AND ${newer} ${BUMP}`,
		)
		.bind(...counterArgs(appid, userkey, row));
}

/** A reward's counter arguments, in the order of rewardCounters' parameters ?1-?9 and batchRewardCounters' JSON items 0-8. */
function counterArgs(appid: string, userkey: string, row: ProjectedReward) {
	return [
		`${userkey}-${row.seq}`,
		appid,
		row.campaignid,
		slotOf(row.created_at),
		row.rewardunit,
		earned(row),
		fromHundredths(row.redeemed),
		slotOf(row.updated_at),
		row.version,
	] as const;
}

/** Rewards counted per statement by batchRewardCounters: keeps its one JSON parameter far below D1's limits. */
const COUNTED_PER_STATEMENT = 100;

/**
 * The counters of many rewards of a projection batch (db/projection-batch.ts)
 * in one statement per 100 rewards instead of one each (issue 33, rows
 * written): the same guards as rewardCounters, read from the projection as it
 * was before the batch, then summed per slot row, so the rewards of many
 * conversions in the same quarter hour write each counter row once. Batched
 * BEFORE the projection upserts, and only for rewards that appear once in
 * the batch (a reward twice, at two versions, keeps rewardCounters before
 * each of its upserts, so each version is compared with the one before it).
 */
export function batchRewardCounters(
	db: D1Database,
	rewards: { appid: string; userkey: string; row: ProjectedReward }[],
): D1PreparedStatement[] {
	const statements: D1PreparedStatement[] = [];
	for (let i = 0; i < rewards.length; i += COUNTED_PER_STATEMENT) {
		const chunk = rewards.slice(i, i + COUNTED_PER_STATEMENT).map(({ appid, userkey, row }) => counterArgs(appid, userkey, row));
		statements.push(
			db
				.prepare(
					`WITH r AS (
					   SELECT j.value ->> 1 AS appid, j.value ->> 2 AS campaignid, j.value ->> 3 AS created, j.value ->> 4 AS unit,
					     j.value ->> 5 AS earned, j.value ->> 6 AS redeemed, j.value ->> 7 AS updated, j.value ->> 8 AS version,
					     p.version AS was, CASE WHEN p.rewardstatus = 'Rejected' THEN 0 ELSE p.reward END AS was_earned, p.redeemed AS was_redeemed
					   FROM json_each(?1) j LEFT JOIN rewards p ON p.rewarddtlid = j.value ->> 0
					 ), c AS (
					   SELECT appid, campaignid, created AS slot, 'rewards_created' AS metric, '' AS unit, 1 AS value FROM r WHERE was IS NULL
					   UNION ALL SELECT appid, campaignid, created, 'reward_amount', unit, earned - COALESCE(was_earned, 0) FROM r
					     WHERE earned - COALESCE(was_earned, 0) <> 0 AND version > COALESCE(was, -1)
					   UNION ALL SELECT appid, campaignid, updated, 'redeemed', unit, redeemed - COALESCE(was_redeemed, 0) FROM r
					     WHERE redeemed - COALESCE(was_redeemed, 0) <> 0 AND version > COALESCE(was, -1)
					 )
					 ${INTO}
					 SELECT appid, campaignid, slot, metric, unit, SUM(value) FROM c WHERE true GROUP BY appid, campaignid, slot, metric, unit ${BUMP}`,
				)
				.bind(JSON.stringify(chunk)),
		);
	}
	return statements;
}

export interface StatsQuery {
	appid: string;
	campaignid: number | null;
	/** Inclusive local days, YYYY-MM-DD, of the IANA time zone `zone`. */
	from: string;
	to: string;
	zone: string;
}

export interface StatsCell {
	/** The local day of the app's zone. */
	day: string;
	campaignid: number;
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

const utcDay = (t: number) => new Date(t).toISOString().slice(0, 10);

/**
 * The counters of a range of local days, per day and campaign, and its top
 * referrers: one D1 round trip, two indexed range reads. Each slot becomes
 * its local day in SQL, by the offset of the segment it falls in (a CASE of
 * a few branches: one per daylight-saving change in the range). Top
 * referrers are counted per UTC day (stats_referrer_daily): the UTC days the
 * range overlaps.
 */
export async function readStats(
	db: D1Database,
	q: StatsQuery,
	pool: ShardPool | null = null,
): Promise<{ cells: StatsCell[]; top: TopReferrer[] }> {
	const start = localDayStart(q.zone, q.from);
	const end = localDayStart(q.zone, utcDay(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000));
	const segments = offsetSegments(q.zone, start, end);
	const args: (string | number | null)[] = [
		q.appid,
		slotOf(new Date(start).toISOString()),
		slotOf(new Date(end).toISOString()),
		q.campaignid,
	];
	const param = (value: string) => {
		args.push(value);
		return `?${args.length}`;
	};
	const localDay = (segment: OffsetSegment) => `substr(datetime(slot || ':00', ${param(`${segment.offsetMinutes} minutes`)}), 1, 10)`;
	const [first, ...later] = segments;
	const branches = later.reverse().map((segment) => `WHEN slot >= ${param(segment.from)} THEN ${localDay(segment)}`);
	const day =
		branches.length > 0 ? `CASE ${branches.join(" ")} ELSE ${first ? localDay(first) : "NULL"} END` : first ? localDay(first) : "NULL";
	const cellsOf = (on: D1Database) =>
		on
			.prepare(
				`SELECT ${day} AS day, campaignid, metric, unit, SUM(value) AS value FROM stats_slots
				 WHERE appid = ?1 AND slot >= ?2 AND slot < ?3 AND (?4 IS NULL OR campaignid = ?4)
				 GROUP BY 1, campaignid, metric, unit ORDER BY 1`,
			)
			.bind(...args);
	// A sharded app's reward counters are in its owners' shards (issue 50 phase 2b-1): their cells are added to the
	// control database's (sign-ups, conversions, clicks), asked at the same time.
	const fromShards = pool ? onEveryShard(pool, async (shard) => rowsOf<StatsCell>(await cellsOf(shard).all())) : Promise.resolve([]);
	const [cells, top] = await db.batch([
		cellsOf(db),
		db
			.prepare(
				`SELECT u.userkey, u.email, u.name, u.referralcode, t.conversions FROM (
				   SELECT referrer_userid, SUM(conversions) AS conversions FROM stats_referrer_daily
				   WHERE appid = ?1 AND day >= ?2 AND day <= ?3 AND (?4 IS NULL OR campaignid = ?4)
				   GROUP BY referrer_userid ORDER BY conversions DESC, referrer_userid LIMIT 10
				 ) t JOIN users u ON u.userid = t.referrer_userid ORDER BY t.conversions DESC, u.userid`,
			)
			.bind(q.appid, utcDay(start), utcDay(end - 1), q.campaignid),
	]);
	const summed = sumCounters(
		[rowsOf<StatsCell>(cells), ...(await fromShards)],
		(c) => JSON.stringify([c.day, c.campaignid, c.metric, c.unit]),
		["value"],
	);
	return {
		cells: summed.sort((x, y) => (x.day < y.day ? -1 : x.day > y.day ? 1 : 0)),
		top: rowsOf<TopReferrer>(top),
	};
}
