import { nowIso } from "../domain/dates";
import type { D1Reader } from "./session";

/** A user of an app, as stored. */
export interface User {
	userid: number;
	appid: string;
	userkey: string;
	referralcode: string;
	campaignid: number;
	email: string | null;
	useraccountid: string | null;
	name: string | null;
	phone: string | null;
	profileimage: string | null;
	city: string | null;
	state: string | null;
	country: string | null;
	paymentcustomerid: string | null;
	usertimezone: string | null;
	extrainfo: string | null;
	isexistinguser: boolean;
	referrerUserid: number | null;
	/** Friend status towards the referrer: SignUp until the first non-Signup event, then Converted. */
	status: "SignUp" | "Converted";
	friendsCount: number;
	convertedFriendsCount: number;
	createdAt: string;
	updatedAt: string;
	/** Referral code of the referrer, or null. */
	referrerCode: string | null;
	/** Custom share-link domain of the user's campaign ("" for none). */
	customdomain: string;
	/** When the person was erased (admin privacy API), or null. An erased user is refused by every operation. */
	erasedAt: string | null;
}

/** Profile fields a caller may set on register and updateuser. */
export const PROFILE_FIELDS = [
	"email",
	"useraccountid",
	"name",
	"phone",
	"profileimage",
	"city",
	"state",
	"country",
	"paymentcustomerid",
	"usertimezone",
	"extrainfo",
] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];
export type Profile = Partial<Record<ProfileField, string>> & { isexistinguser?: boolean };

export interface UserRow
	extends Omit<
		User,
		| "isexistinguser"
		| "referrerUserid"
		| "friendsCount"
		| "convertedFriendsCount"
		| "createdAt"
		| "updatedAt"
		| "referrerCode"
		| "customdomain"
		| "erasedAt"
	> {
	isexistinguser: number;
	referrer_userid: number | null;
	friends_count: number;
	converted_friends_count: number;
	created_at: string;
	updated_at: string;
	referrer_code: string | null;
	customdomain: string | null;
	erased_at: string | null;
}

/**
 * Users with what their responses need: the referrer's code and the
 * campaign's share-link domain. Every user read goes through this.
 */
export const USER_VIEW = `SELECT u.*, r.referralcode AS referrer_code, c.customdomain AS customdomain
	FROM users u LEFT JOIN users r ON r.userid = u.referrer_userid LEFT JOIN campaigns c ON c.campaignid = u.campaignid`;

/** Maps a USER_VIEW row to a User. */
export const toUser = (row: UserRow): User => ({
	userid: row.userid,
	appid: row.appid,
	userkey: row.userkey,
	referralcode: row.referralcode,
	campaignid: row.campaignid,
	email: row.email,
	useraccountid: row.useraccountid,
	name: row.name,
	phone: row.phone,
	profileimage: row.profileimage,
	city: row.city,
	state: row.state,
	country: row.country,
	paymentcustomerid: row.paymentcustomerid,
	usertimezone: row.usertimezone,
	extrainfo: row.extrainfo,
	isexistinguser: row.isexistinguser === 1,
	referrerUserid: row.referrer_userid,
	status: row.status,
	friendsCount: row.friends_count,
	convertedFriendsCount: row.converted_friends_count,
	createdAt: row.created_at,
	updatedAt: row.updated_at,
	referrerCode: row.referrer_code,
	customdomain: row.customdomain ?? "",
	erasedAt: row.erased_at,
});

/** How a request names a user: `userkey` first, else `email`, else `useraccountid`. */
export interface UserRef {
	userkey?: string;
	email?: string;
	useraccountid?: string;
}

/**
 * The one place users are looked up by what a request sends, always within
 * the app. A `userkey` that is sent decides alone (no fallback to email), so
 * a wrong key never silently finds someone else. Returns null when absent.
 */
export function userLookup(db: D1Reader, appid: string, ref: UserRef): D1PreparedStatement | null {
	const by = refColumn(ref);
	return by && db.prepare(`${USER_VIEW} WHERE u.appid = ? AND u.${by.column} = ?`).bind(appid, by.value);
}

/** The column and value a ref is looked up by (the priority of userLookup). */
function refColumn(ref: UserRef): { column: "userkey" | "email" | "useraccountid"; value: string } | null {
	if (ref.userkey) return { column: "userkey", value: ref.userkey };
	if (ref.email) return { column: "email", value: ref.email };
	if (ref.useraccountid) return { column: "useraccountid", value: ref.useraccountid };
	return null;
}

/**
 * What a friends page shows of each friend. Only these columns are read: D1's
 * client turns every cell of every row into an object property (about 1.6 ms
 * of CPU for 50 whole `users` rows, a quarter of that for these).
 */
export type FriendRow = Pick<UserRow, "userkey" | "email" | "useraccountid" | "name" | "profileimage" | "status" | "created_at">;

/**
 * One page of the friends of the user named by `ref`, newest first, read
 * through the (referrer_userid, userid) index. Batch it with userLookup.
 * A page that starts beyond the friend count (kept on the user) is empty at
 * once: the condition holds no column of the scanned rows, so SQLite tests it
 * before the scan instead of stepping over `offset` index entries.
 */
export function friendsPageLookup(db: D1Reader, appid: string, ref: UserRef, limit: number, offset: number): D1PreparedStatement | null {
	const by = refColumn(ref);
	return (
		by &&
		db
			.prepare(
				`SELECT userkey, email, useraccountid, name, profileimage, status, created_at
				 FROM users WHERE referrer_userid = (SELECT userid FROM users WHERE appid = ?1 AND ${by.column} = ?2)
				 AND ?4 < (SELECT friends_count FROM users WHERE appid = ?1 AND ${by.column} = ?2)
				 ORDER BY userid DESC LIMIT ?3 OFFSET ?4`,
			)
			.bind(appid, by.value, limit, offset)
	);
}

/** Runs userLookup; null when the ref names nobody of this app. */
export async function findUser(db: D1Database, appid: string, ref: UserRef): Promise<User | null> {
	const row = await userLookup(db, appid, ref)?.first<UserRow>();
	return row ? toUser(row) : null;
}

/** The user registered with this email or account id in the app (account id first). */
export function existingUserLookup(db: D1Database, appid: string, email?: string, useraccountid?: string): D1PreparedStatement {
	return db
		.prepare(
			`${USER_VIEW} WHERE u.appid = ?1 AND ((?3 IS NOT NULL AND u.useraccountid = ?3) OR (?2 IS NOT NULL AND u.email = ?2))
			 ORDER BY (u.useraccountid IS ?3) DESC LIMIT 1`,
		)
		.bind(appid, email ?? null, useraccountid ?? null);
}

/**
 * The owner of a referral code within the app (codes are matched without
 * regard to case), by its current code or by a code it had before (an alias,
 * kept when a vanity code replaced it: printed codes keep working); an erased
 * user's codes are dead. Two primary-key seeks at most.
 */
export function referrerLookup(db: D1Database, appid: string, code: string): D1PreparedStatement {
	return db
		.prepare(
			`${USER_VIEW} WHERE u.userid = COALESCE((SELECT userid FROM users WHERE referralcode = ?1 AND appid = ?2),
			   (SELECT userid FROM referral_code_aliases WHERE code = ?1 AND appid = ?2)) AND u.erased_at IS NULL`,
		)
		.bind(code.toUpperCase(), appid);
}

/** The current code of the live user who had `code` before (an alias), or null (share links of an old code). */
export async function currentCodeOf(db: D1Database, code: string): Promise<string | null> {
	const row = await db
		.prepare(
			"SELECT u.referralcode FROM referral_code_aliases a JOIN users u ON u.userid = a.userid WHERE a.code = ? AND u.erased_at IS NULL",
		)
		.bind(code.toUpperCase())
		.first<{ referralcode: string }>();
	return row?.referralcode ?? null;
}

/** Runs referrerLookup; null when the code is no live user's of the app. */
export async function findReferrer(db: D1Database, appid: string, code: string): Promise<User | null> {
	const row = await referrerLookup(db, appid, code).first<UserRow>();
	return row ? toUser(row) : null;
}

export interface NewUser {
	appid: string;
	userkey: string;
	referralcode: string;
	campaignid: number;
	profile: Profile;
	referrerUserid: number | null;
	/** When it registered (ISO): the caller's own time, so what it keeps elsewhere (the referrer's ledger) says the same. */
	createdAt?: string;
}

/**
 * Inserts a user unless its email, account id or referral code is taken
 * (then nothing happens and `changes` is 0). `attribution_id` is the new
 * userkey, so statements batched after it can test that this insert happened.
 */
export function insertUser(db: D1Database, user: NewUser): D1PreparedStatement {
	const now = user.createdAt ?? nowIso();
	const cols = PROFILE_FIELDS.filter((f) => user.profile[f] !== undefined);
	return db
		.prepare(
			`INSERT INTO users (appid, userkey, referralcode, campaignid, isexistinguser, referrer_userid, attributed_at, attribution_id,
			 created_at, updated_at${cols.map((c) => `, ${c}`).join("")})
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?${cols.map(() => ", ?").join("")}) ON CONFLICT DO NOTHING`,
		)
		.bind(
			user.appid,
			user.userkey,
			user.referralcode,
			user.campaignid,
			user.profile.isexistinguser ? 1 : 0,
			user.referrerUserid,
			user.referrerUserid === null ? null : now,
			user.referrerUserid === null ? null : user.userkey,
			now,
			now,
			...cols.map((c) => user.profile[c] ?? null),
		);
}

/** SQL condition (and its args) true only once the attribution made under `attributionId` is stored. */
export const attributionHappened = (attributionId: string) => ({
	sql: "EXISTS (SELECT 1 FROM users WHERE attribution_id = ?)",
	args: [attributionId],
});

/** Adds one friend to the referrer's counter, only if the attribution `attributionId` happened. */
export function countNewFriend(db: D1Database, referrerUserid: number, attributionId: string): D1PreparedStatement {
	const cond = attributionHappened(attributionId);
	return db
		.prepare(`UPDATE users SET friends_count = friends_count + 1 WHERE userid = ? AND ${cond.sql}`)
		.bind(referrerUserid, ...cond.args);
}
