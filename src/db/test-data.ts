import { type AuditEntry, auditStatement } from "./audit";
import { onEveryShard } from "./fanout";
import type { ShardPool } from "./shards";

/**
 * Erasing a test twin's data (DELETE /admin/v1/apps/{appid}/testdata,
 * docs/test-mode.md), in bounded rounds: each statement deletes at most
 * ROUND rows through an index on its appid (or on the round's users), so a
 * round costs the same whatever the twin holds. The twin's row, keys and
 * Stripe connection stay. Only ever called with a twin's appid (the route
 * resolves it from the live app), never a live one.
 */
export const ROUND = 200;
/** Users per round: each has a ledger to erase (one Durable Object call), so fewer than rows. */
export const USER_ROUND = 50;

/** One round's users of the twin: their ledgers are erased before their rows (users_app). */
export async function testUsersRound(db: D1Database, testAppid: string): Promise<{ userid: number; userkey: string }[]> {
	const { results } = await db
		.prepare("SELECT userid, userkey FROM users WHERE appid = ? ORDER BY userid DESC LIMIT ?")
		.bind(testAppid, USER_ROUND)
		.all<{ userid: number; userkey: string }>();
	return results;
}

/** The rows keyed by the twin's appid, each table bounded by ROUND (its appid index), and its coupon codes freed. */
const APP_TABLES = [
	// Attempts first: they name outbox events of the twin (delivery_attempts_event, outbox_app).
	`DELETE FROM delivery_attempts WHERE eventid IN (SELECT eventid FROM outbox_events WHERE appid = ?1 ORDER BY created_at DESC LIMIT ${ROUND})`,
	`DELETE FROM outbox_events WHERE eventid IN (SELECT eventid FROM outbox_events WHERE appid = ?1 ORDER BY created_at DESC LIMIT ${ROUND})`,
	`DELETE FROM rewards WHERE rewarddtlid IN (SELECT rewarddtlid FROM rewards WHERE appid = ?1 ORDER BY created_at DESC LIMIT ${ROUND})`,
	`DELETE FROM conversion_events WHERE eventid IN (SELECT eventid FROM conversion_events WHERE appid = ?1 ORDER BY customid LIMIT ${ROUND})`,
	`DELETE FROM idempotency_keys WHERE (appid, idempotency_key) IN
	   (SELECT appid, idempotency_key FROM idempotency_keys WHERE appid = ?1 ORDER BY idempotency_key LIMIT ${ROUND})`,
	`DELETE FROM privacy_log WHERE logid IN (SELECT logid FROM privacy_log WHERE appid = ?1 ORDER BY userkey LIMIT ${ROUND})`,
	`DELETE FROM stats_daily WHERE (appid, day, campaignid, metric, unit) IN
	   (SELECT appid, day, campaignid, metric, unit FROM stats_daily WHERE appid = ?1 ORDER BY day LIMIT ${ROUND})`,
	`DELETE FROM stats_slots WHERE (appid, slot, campaignid, metric, unit) IN
	   (SELECT appid, slot, campaignid, metric, unit FROM stats_slots WHERE appid = ?1 ORDER BY slot LIMIT ${ROUND})`,
	`DELETE FROM stats_referrer_daily WHERE (appid, day, referrer_userid, campaignid) IN
	   (SELECT appid, day, referrer_userid, campaignid FROM stats_referrer_daily WHERE appid = ?1 ORDER BY day LIMIT ${ROUND})`,
	`DELETE FROM stripe_links WHERE (appid, customid) IN (SELECT appid, customid FROM stripe_links WHERE appid = ?1 ORDER BY customid LIMIT ${ROUND})`,
	`DELETE FROM stripe_inbox WHERE (appid, eventid) IN (SELECT appid, eventid FROM stripe_inbox WHERE appid = ?1 ORDER BY eventid LIMIT ${ROUND})`,
	"DELETE FROM stripe_event_counts WHERE appid = ?1",
	`DELETE FROM stripe_promotion_codes WHERE (appid, promotion_code) IN
	   (SELECT appid, promotion_code FROM stripe_promotion_codes WHERE appid = ?1 ORDER BY promotion_code LIMIT ${ROUND})`,
	`DELETE FROM stripe_customer_claims WHERE (appid, customer) IN
	   (SELECT appid, customer FROM stripe_customer_claims WHERE appid = ?1 ORDER BY customer LIMIT ${ROUND})`,
	`DELETE FROM stripe_disputes WHERE (appid, dispute) IN
	   (SELECT appid, dispute FROM stripe_disputes WHERE appid = ?1 ORDER BY dispute LIMIT ${ROUND})`,
	`DELETE FROM stripe_cases WHERE (appid, eventid, kind) IN
	   (SELECT appid, eventid, kind FROM stripe_cases WHERE appid = ?1 ORDER BY eventid LIMIT ${ROUND})`,
	"DELETE FROM webhook_breakers WHERE appid = ?1",
	// The twin's board counters (a range of their primary key's appid; the levels and tie slices follow by their
	// triggers): left behind before issue 50 phase 2b-1, whose test of a sharded twin's deletion found them.
	`DELETE FROM leaderboard_counts WHERE (appid, userkey, campaignid, bucket) IN
	   (SELECT appid, userkey, campaignid, bucket FROM leaderboard_counts WHERE appid = ?1 ORDER BY userkey LIMIT ${ROUND})`,
	// Codes of the campaigns' test pools held by the twin's rewards go back to their pool (reward_key is
	// `<appid>:<userkey>:<key>`, so the twin's keys are the range after `<appid>:`, on its unique index).
	`UPDATE coupons SET reward_key = NULL, assigned_at = NULL WHERE couponid IN
	   (SELECT couponid FROM coupons WHERE reward_key >= ?1 || ':' AND reward_key < ?1 || ';' LIMIT ${ROUND})`,
];

/**
 * One round of the rows keyed by the twin's appid, in ONE batch: up to ROUND
 * of each table. Answers how many it deleted (0: none left). Runs after the
 * users rounds, once no ledger of the twin is left to flush into these tables.
 */
export async function deleteTestAppRows(db: D1Database, testAppid: string): Promise<number> {
	const results = await db.batch(APP_TABLES.map((sql) => db.prepare(sql).bind(testAppid)));
	return results.reduce((sum, r) => sum + (r.meta.changes ?? 0), 0);
}

/**
 * One round of users in ONE batch, after their ledgers were erased: the rows
 * they own (events, reward projections, clicks by their codes, reminders,
 * identifiers), then the users. Referrals pointing at them are cut first, so
 * the foreign key holds whichever of referrer and friend goes first.
 */
export async function deleteTestUsers(db: D1Database, testAppid: string, users: { userid: number; userkey: string }[]): Promise<number> {
	const ids = JSON.stringify(users.map((u) => u.userid));
	const keys = JSON.stringify(users.map((u) => u.userkey));
	const userids = "SELECT value FROM json_each(?2)";
	const codes = `SELECT referralcode FROM users WHERE appid = ?1 AND userid IN (${userids})`;
	const results = await db.batch([
		db.prepare(`UPDATE users SET referrer_userid = NULL WHERE referrer_userid IN (${userids})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM conversion_events WHERE userid IN (${userids})`).bind(testAppid, ids),
		db.prepare("DELETE FROM rewards WHERE appid = ?1 AND userkey IN (SELECT value FROM json_each(?2))").bind(testAppid, keys),
		db.prepare(`DELETE FROM link_clicks WHERE referralcode IN (${codes})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM link_click_log WHERE referralcode IN (${codes})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM link_click_seen WHERE referralcode IN (${codes})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM friend_reminders WHERE friend_userid IN (${userids})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM user_identifiers WHERE userid IN (${userids})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM referral_code_aliases WHERE userid IN (${userids})`).bind(testAppid, ids),
		db.prepare(`DELETE FROM users WHERE appid = ?1 AND userid IN (${userids})`).bind(testAppid, ids),
	]);
	return results.reduce((sum, r) => sum + (r.meta.changes ?? 0), 0);
}

/**
 * A sharded twin's rows in the shards (issue 50 phase 2b-1): up to ROUND of each table per shard, every shard at
 * once (each statement a range of its table's appid index or primary key). The board's levels and tie slices
 * follow the counters' deletes (their triggers). Answers how many it deleted (0: none left).
 */
const SHARD_TABLES = [
	`DELETE FROM rewards WHERE rewarddtlid IN (SELECT rewarddtlid FROM rewards WHERE appid = ?1 ORDER BY created_at DESC LIMIT ${ROUND})`,
	`DELETE FROM stats_slots WHERE (appid, slot, campaignid, metric, unit) IN
	   (SELECT appid, slot, campaignid, metric, unit FROM stats_slots WHERE appid = ?1 ORDER BY slot LIMIT ${ROUND})`,
	`DELETE FROM leaderboard_counts WHERE (appid, userkey, campaignid, bucket) IN
	   (SELECT appid, userkey, campaignid, bucket FROM leaderboard_counts WHERE appid = ?1 ORDER BY userkey LIMIT ${ROUND})`,
	`DELETE FROM erased_owners WHERE (appid, userkey) IN (SELECT appid, userkey FROM erased_owners WHERE appid = ?1 ORDER BY userkey LIMIT ${ROUND})`,
];

export async function deleteTestShardRows(pool: ShardPool, testAppid: string): Promise<number> {
	const perShard = await onEveryShard(pool, (db) => db.batch(SHARD_TABLES.map((sql) => db.prepare(sql).bind(testAppid))));
	return perShard.flat().reduce((sum, r) => sum + (r.meta.changes ?? 0), 0);
}

/** A round's users' reward projections in a sharded twin's shards (each user's in its home shard), after their ledgers were erased. */
export async function deleteTestShardUsers(pool: ShardPool, testAppid: string, userkeys: string[]): Promise<number> {
	const byShard = new Map<number, string[]>();
	for (const key of userkeys) {
		const n = pool.numberFor(testAppid, key);
		byShard.set(n, [...(byShard.get(n) ?? []), key]);
	}
	const counts = await Promise.all(
		[...byShard.values()].map(async (keys) => {
			const result = await pool
				.for(testAppid, keys[0] ?? "")
				.prepare("DELETE FROM rewards WHERE appid = ?1 AND userkey IN (SELECT value FROM json_each(?2))")
				.bind(testAppid, JSON.stringify(keys))
				.run();
			return result.meta.changes ?? 0;
		}),
	);
	return counts.reduce((a, b) => a + b, 0);
}

/** Records who erased the test data and how much, once the erasure is done. */
export async function auditTestDataErased(db: D1Database, audit: AuditEntry): Promise<void> {
	await auditStatement(db, audit).run();
}
