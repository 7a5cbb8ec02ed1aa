import { redactJson } from "../privacy/redact";
import { type AuditEntry, auditStatement } from "./audit";
import { deleteLeaderboardCounters } from "./leaderboard";
import type { SqlCondition } from "./outbox-events";
import { firstRowOf, rowsOf } from "./rows";
import { deleteStripeCasesOf } from "./stripe-identity";
import { toUser, USER_VIEW, type User, type UserRow } from "./users";

/** Erasure and export of one person's data in D1 (admin, src/admin/privacy.ts). */

export interface PersonRecord {
	user: User;
	erasedAt: string | null;
	useragent: string | null;
	referrerUserkey: string | null;
	devices: { deviceid: string; firstseen: string }[];
	iphashes: { iphash: string; firstseen: string }[];
}

/** The user (erased or not) with its devices and IP hashes, or null when the app has no such userkey. */
export async function findPerson(db: D1Database, appid: string, userkey: string): Promise<PersonRecord | null> {
	const [userResult, referrerResult, identifiers] = await db.batch([
		db.prepare(`${USER_VIEW} WHERE u.appid = ? AND u.userkey = ?`).bind(appid, userkey),
		db
			.prepare("SELECT r.userkey FROM users u JOIN users r ON r.userid = u.referrer_userid WHERE u.appid = ? AND u.userkey = ?")
			.bind(appid, userkey),
		db
			.prepare(
				`SELECT i.kind, i.value, i.created_at FROM user_identifiers i JOIN users u ON u.userid = i.userid
				 WHERE u.appid = ? AND u.userkey = ? ORDER BY i.created_at, i.value`,
			)
			.bind(appid, userkey),
	]);
	const row = firstRowOf<UserRow & { erased_at: string | null; useragent: string | null }>(userResult);
	if (!row) return null;
	const ids = rowsOf<{ kind: string; value: string; created_at: string }>(identifiers);
	return {
		user: toUser(row),
		erasedAt: row.erased_at,
		useragent: row.useragent,
		referrerUserkey: firstRowOf<{ userkey: string }>(referrerResult)?.userkey ?? null,
		devices: ids.filter((i) => i.kind === "device").map((i) => ({ deviceid: i.value, firstseen: i.created_at })),
		iphashes: ids.filter((i) => i.kind === "ip").map((i) => ({ iphash: i.value, firstseen: i.created_at })),
	};
}

/** The customids of the person's events in D1 (a seek of conversion_events_first by userid; bounded by the person's events). */
export async function eventCustomids(db: D1Database, userid: number): Promise<string[]> {
	const rows = await db.prepare("SELECT customid FROM conversion_events WHERE userid = ?").bind(userid).all<{ customid: string }>();
	return rows.results.map((r) => r.customid);
}

/** What D1 holds about a person beyond the user row: friends, events and share-link clicks. */
export async function personActivity(db: D1Database, user: User) {
	const [friends, events, daily, clicks] = await db.batch<Record<string, unknown>>([
		db.prepare("SELECT userkey, status, created_at AS registeredat FROM users WHERE referrer_userid = ? ORDER BY userid").bind(user.userid),
		db
			.prepare(
				`SELECT customid, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at AS recordedat
				 FROM conversion_events WHERE userid = ? ORDER BY eventid`,
			)
			.bind(user.userid),
		db.prepare("SELECT day, clicks FROM link_clicks WHERE referralcode = ? ORDER BY day").bind(user.referralcode),
		db
			.prepare("SELECT clicked_at AS clickedat, iphash, useragent FROM link_click_log WHERE referralcode = ? ORDER BY clickid")
			.bind(user.referralcode),
	]);
	return {
		friends: friends?.results ?? [],
		events: events?.results ?? [],
		clicks: { daily: daily?.results ?? [], recent: clicks?.results ?? [] },
	};
}

/**
 * Erases the person in D1, in one transaction: personal fields of the user
 * row (which stays, with its referral code dead), devices, IP hashes, the
 * click log of its code, its events' free text, and the person's values in
 * stored webhook and email payloads. The privacy log entry goes in the same
 * batch. Money (the rewards projection, stats counters) is untouched; the
 * person's leaderboard counters go (an erased user is on no board), and so
 * do the Stripe cases naming it or its Stripe customer.
 *
 * `home`: the user's home shard when its app is sharded (issue 50 phase
 * 2b-1), which holds its counters: first, in one batch there, the user is
 * marked erased (`erased_owners`, the counters' guard on a shard, so a later
 * flush adds none back) and its counters deleted; then the control
 * database's batch. Both are idempotent, so an erasure that fails between
 * them is finished by its retry.
 */
export async function erasePersonInD1(
	db: D1Database,
	person: PersonRecord,
	values: string[],
	log: { actor: string; at: string },
	audit: AuditEntry,
	home: D1Database | null = null,
): Promise<void> {
	const { user } = person;
	if (home)
		await home.batch([
			home
				.prepare("INSERT INTO erased_owners (appid, userkey, erased_at) VALUES (?, ?, ?) ON CONFLICT (appid, userkey) DO NOTHING")
				.bind(user.appid, user.userkey, log.at),
			deleteLeaderboardCounters(home, user.appid, user.userkey),
		]);
	// Payloads that mention the person: by userkey (its own events) or by one of its values (other users' events).
	const needles = [user.userkey, ...values];
	const candidates = await db
		.prepare(
			`SELECT eventid, payload FROM outbox_events WHERE appid = ? AND (${needles.map(() => "instr(lower(payload), ?) > 0").join(" OR ")})`,
		)
		.bind(user.appid, ...needles.map((n) => n.toLowerCase()))
		.all<{ eventid: string; payload: string }>();
	// The frozen decisions of the person's events hold the friend snapshot each reward copies (name, email, image).
	const decisions = await db
		.prepare("SELECT customid, decision FROM conversion_events WHERE appid = ? AND userid = ? AND decision IS NOT NULL")
		.bind(user.appid, user.userid)
		.all<{ customid: string; decision: string }>();
	const rewrites = [
		...candidates.results.flatMap((row) => {
			const redacted = redactJson(row.payload, { userkey: user.userkey, values });
			return redacted === null ? [] : [db.prepare("UPDATE outbox_events SET payload = ? WHERE eventid = ?").bind(redacted, row.eventid)];
		}),
		...decisions.results.flatMap((row) => {
			const redacted = redactJson(row.decision, { userkey: user.userkey, values });
			return redacted === null
				? []
				: [
						db
							.prepare("UPDATE conversion_events SET decision = ? WHERE appid = ? AND customid = ?")
							.bind(redacted, user.appid, row.customid),
					];
		}),
	];
	await db.batch([
		...rewrites,
		db
			.prepare(
				`UPDATE users SET email = NULL, useraccountid = NULL, name = NULL, phone = NULL, profileimage = NULL, city = NULL,
				 state = NULL, country = NULL, paymentcustomerid = NULL, usertimezone = NULL, extrainfo = NULL, useragent = NULL, language = NULL,
				 erased_at = COALESCE(erased_at, ?2), updated_at = ?2 WHERE userid = ?1`,
			)
			.bind(user.userid, log.at),
		db.prepare("DELETE FROM user_identifiers WHERE userid = ?").bind(user.userid),
		// With erased_at set in the same transaction: the counters' guard (db/leaderboard.ts) keeps a later flush from adding them back.
		deleteLeaderboardCounters(db, user.appid, user.userkey),
		db.prepare("DELETE FROM link_click_log WHERE referralcode = ?").bind(user.referralcode),
		db.prepare("DELETE FROM link_click_seen WHERE referralcode = ?").bind(user.referralcode),
		db.prepare("UPDATE conversion_events SET extrainfo = NULL WHERE userid = ? AND extrainfo IS NOT NULL").bind(user.userid),
		// The Stripe cases shown to the operator that name the person or its customer (issue 47's review).
		...deleteStripeCasesOf(db, user.appid, { userkey: user.userkey, customer: user.paymentcustomerid }),
		privacyLogInsert(db, user.appid, user.userkey, "erase", log),
		auditStatement(db, audit),
	]);
}

/**
 * True inside a batch when the ledger of `userkey` may still hold, in what it
 * sent at `sentIso`, values of a person erased since: that user itself, or one
 * of its friends (a referrer's ledger copies its friends' snapshots; the
 * erasure redacts exactly these two ledgers: admin/privacy.ts). The
 * projection queue's consumer writes a message's webhook events only when
 * this is false (db/projection-batch.ts). `erased_at` is the erasure's time
 * taken after both ledgers redacted (admin/privacy.ts), so a message sent
 * before the redaction is always caught; one sent just after it may be too,
 * which only delays it (it is sent again, redacted). Two index seeks: the
 * user by userkey, its erased friends in users_erased_by_referrer (0031).
 */
export const erasedSince = (userkey: string, sentIso: string): SqlCondition => ({
	sql: `EXISTS (SELECT 1 FROM users o WHERE o.userkey = ? AND (o.erased_at >= ?
	        OR EXISTS (SELECT 1 FROM users f WHERE f.referrer_userid = o.userid AND f.erased_at >= ?)))`,
	args: [userkey, sentIso, sentIso],
});

/** One line of the privacy log: who asked for what action on which userkey, and when; never the data. */
function privacyLogInsert(
	db: D1Database,
	appid: string,
	userkey: string,
	action: "erase" | "export",
	log: { actor: string; at: string },
): D1PreparedStatement {
	return db
		.prepare("INSERT INTO privacy_log (appid, userkey, action, actor, at) VALUES (?, ?, ?, ?, ?)")
		.bind(appid, userkey, action, log.actor, log.at);
}

/** Writes one line of the privacy log on its own (an export; an erasure logs in its own batch). */
export async function logPrivacyAction(
	db: D1Database,
	appid: string,
	userkey: string,
	action: "erase" | "export",
	log: { actor: string; at: string },
): Promise<void> {
	await privacyLogInsert(db, appid, userkey, action, log).run();
}

/** The privacy log of one user, oldest first. */
export async function privacyLog(db: D1Database, appid: string, userkey: string) {
	const { results } = await db
		.prepare("SELECT action, actor, at FROM privacy_log WHERE appid = ? AND userkey = ? ORDER BY logid")
		.bind(appid, userkey)
		.all<{ action: string; actor: string; at: string }>();
	return results;
}
