/** Admin reads of users: search, profile, friends (keyset pages, newest first). */

export interface AdminUserRow {
	userid: number;
	userkey: string;
	email: string | null;
	useraccountid: string | null;
	name: string | null;
	phone: string | null;
	referralcode: string;
	campaignid: number;
	status: string;
	friends_count: number;
	converted_friends_count: number;
	created_at: string;
	referrer_userkey: string | null;
	referrer_email: string | null;
	referrer_name: string | null;
	referrer_code: string | null;
}

const SELECT = `SELECT u.userid, u.userkey, u.email, u.useraccountid, u.name, u.phone, u.referralcode, u.campaignid, u.status,
	u.friends_count, u.converted_friends_count, u.created_at,
	r.userkey AS referrer_userkey, r.email AS referrer_email, r.name AS referrer_name, r.referralcode AS referrer_code
	FROM users u LEFT JOIN users r ON r.userid = u.referrer_userid`;

/** LIKE pattern matching values that start with `text` literally. */
const prefix = (text: string) => `${text.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

/**
 * Users of the app, newest first, after the user id `before`. `q` matches an
 * email, useraccountid or userkey by prefix, or a referral code exactly.
 */
export async function searchUsers(
	db: D1Database,
	appid: string,
	q: string | null,
	before: number | null,
	limit: number,
): Promise<AdminUserRow[]> {
	const { results } = await db
		.prepare(
			`${SELECT} WHERE u.appid = ?1 AND (?2 IS NULL OR u.userid < ?2)
			 AND (?3 IS NULL OR u.email LIKE ?4 ESCAPE '\\' OR u.useraccountid LIKE ?4 ESCAPE '\\' OR u.userkey LIKE ?4 ESCAPE '\\'
			      OR u.referralcode = upper(?3))
			 ORDER BY u.userid DESC LIMIT ?5`,
		)
		.bind(appid, before, q, q === null ? null : prefix(q), limit)
		.all<AdminUserRow>();
	return results;
}

export async function findAdminUser(db: D1Database, appid: string, userkey: string): Promise<AdminUserRow | null> {
	return db.prepare(`${SELECT} WHERE u.appid = ? AND u.userkey = ?`).bind(appid, userkey).first<AdminUserRow>();
}

/** Friends of the user `referrerUserid`, newest first, after the user id `before` (index users_referrer). */
export async function friendsOf(db: D1Database, referrerUserid: number, before: number | null, limit: number): Promise<AdminUserRow[]> {
	const { results } = await db
		.prepare(`${SELECT} WHERE u.referrer_userid = ?1 AND (?2 IS NULL OR u.userid < ?2) ORDER BY u.userid DESC LIMIT ?3`)
		.bind(referrerUserid, before, limit)
		.all<AdminUserRow>();
	return results;
}

export interface ClickDay {
	day: string;
	clicks: number;
}

/** Share-link clicks of a referral code per UTC day, newest first (at most `days` days). */
export async function clicksOf(db: D1Database, referralcode: string, days: number): Promise<ClickDay[]> {
	const { results } = await db
		.prepare("SELECT day, clicks FROM link_clicks WHERE referralcode = ? ORDER BY day DESC LIMIT ?")
		.bind(referralcode, days)
		.all<ClickDay>();
	return results;
}
