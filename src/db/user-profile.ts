import type { SignalFacts } from "../fraud/signals";
import { firstRowOf, rowsOf } from "./rows";
import { toUser, USER_VIEW, type User, type UserRow } from "./users";

/**
 * What a conversion reads of a user from D1 when the user's ledger keeps no
 * profile (ledger/profile.ts, issue 49): a user written before the upgrade,
 * or one whose profile was forgotten after a change. One round trip, with
 * the statements the conversion's context read ran before (the user through
 * USER_VIEW, the velocity count of signalFactsLookup), and the user's own
 * device ids and IP hashes through user_identifiers_user.
 */

/** The user as a conversion decides with it (the fields rules/rules.ts and the fraud checks read). */
export type ConversionUser = Pick<
	User,
	| "userkey"
	| "email"
	| "name"
	| "profileimage"
	| "phone"
	| "paymentcustomerid"
	| "isexistinguser"
	| "campaignid"
	| "erasedAt"
	// What the referrer's ledger keeps of a friend it may not hold yet, when the friend converts (ledger/friends.ts).
	| "userid"
	| "useraccountid"
	| "createdAt"
> & {
	/**
	 * Whether the user's referrer's ledger was told it converted (its friends page, issue 49): kept in the user's
	 * ledger profile, so a later conversion makes no call of its own to say it again. Absent: not known to be told.
	 */
	convertedTold?: boolean;
};

/** A user's profile as D1 holds it; `devices`/`ips` null when the user has more than `limit` of the kind. */
export interface StoredProfile {
	user: ConversionUser;
	referrerkey: string | null;
	recentReferrals: number;
	devices: string[] | null;
	ips: string[] | null;
}

/** The user's referrer's friends attributed in the hour up to the user's attribution, the user included (docs/fraud.md). */
const RECENT = (me: string) =>
	`(SELECT COUNT(*) FROM users o WHERE o.referrer_userid = ${me}.referrer_userid AND o.attributed_at <= ${me}.attributed_at
	   AND o.attributed_at > strftime('%Y-%m-%dT%H:%M:%fZ', ${me}.attributed_at, '-1 hour'))`;

/** The statements of a profile read (3, in any batch: an attribution reads it back after its write). */
export function storedProfileStatements(db: D1Database, appid: string, userkey: string, limit: number): D1PreparedStatement[] {
	const userid = "(SELECT userid FROM users WHERE appid = ?1 AND userkey = ?2)";
	return [
		db.prepare(`${USER_VIEW} WHERE u.userid = ${userid}`).bind(appid, userkey),
		db
			.prepare(`SELECT r.userkey AS referrerkey, ${RECENT("me")} AS recent FROM users me LEFT JOIN users r ON r.userid = me.referrer_userid
			   WHERE me.userid = ${userid}`)
			.bind(appid, userkey),
		// Bounded: one more than kept per kind tells a user with more apart (its shared check then reads D1).
		db
			.prepare(
				`SELECT kind, value FROM (SELECT kind, value FROM user_identifiers WHERE userid = ${userid} AND kind = 'device' LIMIT ?3)
				 UNION ALL SELECT kind, value FROM (SELECT kind, value FROM user_identifiers WHERE userid = ${userid} AND kind = 'ip' LIMIT ?3)`,
			)
			.bind(appid, userkey, limit + 1),
	];
}

/** The profile the 3 results of storedProfileStatements hold, or null when D1 has no such user. */
export function toStoredProfile(results: D1Result[], limit: number): StoredProfile | null {
	const [userResult, extraResult, identifiersResult] = results;
	const row = firstRowOf<UserRow>(userResult);
	if (!row) return null;
	const extra = firstRowOf<{ referrerkey: string | null; recent: number }>(extraResult);
	const identifiers = rowsOf<{ kind: string; value: string }>(identifiersResult);
	const of = (kind: string) => {
		const values = identifiers.filter((i) => i.kind === kind).map((i) => i.value);
		return values.length > limit ? null : values;
	};
	const user = toUser(row);
	return {
		user: pickConversionUser(user),
		referrerkey: extra?.referrerkey ?? null,
		recentReferrals: user.referrerUserid === null ? 0 : (extra?.recent ?? 0),
		devices: of("device"),
		ips: of("ip"),
	};
}

/** Reads the profile of (app, userkey) in one round trip, or null when D1 has no such user. `limit`: identifiers kept per kind. */
export async function readStoredProfile(db: D1Database, appid: string, userkey: string, limit: number): Promise<StoredProfile | null> {
	return toStoredProfile(await db.batch(storedProfileStatements(db, appid, userkey, limit)), limit);
}

/** The fields of a user a conversion reads. */
export const pickConversionUser = (u: ConversionUser): ConversionUser => ({
	userkey: u.userkey,
	email: u.email,
	name: u.name,
	profileimage: u.profileimage,
	phone: u.phone,
	paymentcustomerid: u.paymentcustomerid,
	isexistinguser: u.isexistinguser,
	campaignid: u.campaignid,
	erasedAt: u.erasedAt,
	userid: u.userid,
	useraccountid: u.useraccountid,
	createdAt: u.createdAt,
});

/**
 * Whether the two users share a device id or an IP hash, as signalFactsLookup decides it: for a user with more
 * identifiers than its profile keeps (one indexed read, named in docs/scaling.md).
 */
export async function sharedIdentifiers(
	db: D1Database,
	appid: string,
	friendkey: string,
	referrerkey: string,
): Promise<Pick<SignalFacts, "sharedDevice" | "sharedNetwork">> {
	const f = "(SELECT userid FROM users WHERE appid = ?1 AND userkey = ?2)";
	const r = "(SELECT userid FROM users WHERE appid = ?1 AND userkey = ?3)";
	const shared = (kind: string) =>
		`EXISTS (SELECT 1 FROM user_identifiers f JOIN user_identifiers r ON r.appid = f.appid AND r.kind = f.kind AND r.value = f.value
		 WHERE f.userid = ${f} AND f.kind = '${kind}' AND r.userid = ${r})`;
	const row = await db
		.prepare(`SELECT ${shared("device")} AS device, ${shared("ip")} AS ip`)
		.bind(appid, friendkey, referrerkey)
		.first<{ device: number; ip: number }>();
	return { sharedDevice: row?.device === 1, sharedNetwork: row?.ip === 1 };
}
