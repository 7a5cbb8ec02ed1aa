import { nowIso } from "../domain/dates";
import { type AuditEntry, auditStatement } from "./audit";
import { firstRowOf, rowsOf } from "./rows";
import { PROFILE_FIELDS, type Profile, type User } from "./users";

/**
 * SQL of the admin bulk import (src/admin/import.ts). Lists travel as one
 * JSON parameter each (`json_each`), so a call of 1,000 users is a couple of
 * statements, not thousands, and stays under D1's 100 bound parameters.
 */

/** What the import needs to know of an existing user. */
export type KnownUser = Pick<User, "userid" | "appid" | "userkey" | "referralcode" | "campaignid" | "email" | "useraccountid">;

export interface ImportLookups {
	byEmail: KnownUser[];
	byAccount: KnownUser[];
	/** Owners of the codes asked for, in ANY app (codes are unique across apps). */
	byCode: KnownUser[];
	defaultCampaign: number | null;
}

const COLUMNS = "userid, appid, userkey, referralcode, campaignid, email, useraccountid";
const list = (values: string[]) => JSON.stringify([...new Set(values)]);

/** Existing users the import collides with or refers to, and the app's default campaign: one round trip. */
export async function importLookups(
	db: D1Database,
	appid: string,
	ask: { emails: string[]; accounts: string[]; codes: string[]; defaultCampaignId: number | null },
): Promise<ImportLookups> {
	const [byEmail, byAccount, byCode, campaign] = await db.batch([
		db.prepare(`SELECT ${COLUMNS} FROM users WHERE appid = ? AND email IN (SELECT value FROM json_each(?))`).bind(appid, list(ask.emails)),
		db
			.prepare(`SELECT ${COLUMNS} FROM users WHERE appid = ? AND useraccountid IN (SELECT value FROM json_each(?))`)
			.bind(appid, list(ask.accounts)),
		db.prepare(`SELECT ${COLUMNS} FROM users WHERE referralcode IN (SELECT value FROM json_each(?))`).bind(list(ask.codes)),
		db.prepare("SELECT campaignid FROM campaigns WHERE campaignid = ? AND appid = ?").bind(ask.defaultCampaignId, appid),
	]);
	const defaultCampaign = firstRowOf<{ campaignid: number }>(campaign)?.campaignid ?? null;
	return {
		byEmail: rowsOf<KnownUser>(byEmail),
		byAccount: rowsOf<KnownUser>(byAccount),
		byCode: rowsOf<KnownUser>(byCode),
		defaultCampaign,
	};
}

/** One user to insert; `referrerUserid` for an existing referrer, `referrerKey` for one earlier in the same import. */
export interface ImportRow {
	userkey: string;
	referralcode: string;
	campaignid: number;
	profile: Profile;
	referrerUserid: number | null;
	referrerKey: string | null;
	/** The referrer's userkey, existing or earlier in the import (its ledger keeps the friend: issue 49 piece 4); not written here. */
	referrerUserkey: string | null;
}

/** A user the import inserted: its D1 userid and registration time (the referrers' ledgers keep them). */
export type ImportedUser = { userid: number; userkey: string; created_at: string };

/**
 * Inserts every row or none: one batch (one transaction) of three
 * statements. Plain INSERTs, so any uniqueness conflict (a user registered
 * meanwhile, a code collision) fails the batch and leaves nothing behind.
 * Friends referred by users of the same import get their referrer in a
 * second statement (an INSERT ... SELECT does not see its own rows); the
 * referrers' friend counters move by the number of friends each gained.
 */
export async function insertImportedUsers(
	db: D1Database,
	appid: string,
	rows: ImportRow[],
	audit: AuditEntry,
): Promise<{ inserted: ImportedUser[]; pointers: ImportedPointer[] }> {
	const now = nowIso();
	const json = JSON.stringify(
		rows.map((r) => ({
			userkey: r.userkey,
			referralcode: r.referralcode,
			campaignid: r.campaignid,
			isexistinguser: r.profile.isexistinguser ? 1 : 0,
			referrerid: r.referrerUserid,
			referrerkey: r.referrerKey,
			referred: r.referrerUserid !== null || r.referrerKey !== null ? 1 : 0,
			...Object.fromEntries(PROFILE_FIELDS.map((f) => [f, r.profile[f] ?? null])),
		})),
	);
	const gained = new Map<string, number>();
	for (const r of rows) {
		const key = r.referrerKey ?? (r.referrerUserid === null ? null : `#${r.referrerUserid}`);
		if (key) gained.set(key, (gained.get(key) ?? 0) + 1);
	}
	const counts = JSON.stringify([...gained].map(([k, n]) => (k.startsWith("#") ? { id: Number(k.slice(1)), n } : { key: k, n })));
	const field = (name: string) => `json_extract(value, '$.${name}')`;
	const results = await db.batch([
		db
			.prepare(
				`INSERT INTO users (appid, userkey, referralcode, campaignid, isexistinguser, referrer_userid, attributed_at, attribution_id,
				   created_at, updated_at, ${PROFILE_FIELDS.join(", ")})
				 SELECT ?1, ${field("userkey")}, ${field("referralcode")}, ${field("campaignid")}, ${field("isexistinguser")}, ${field("referrerid")},
				   CASE WHEN ${field("referred")} = 1 THEN ?3 END, CASE WHEN ${field("referred")} = 1 THEN ${field("userkey")} END, ?3, ?3,
				   ${PROFILE_FIELDS.map(field).join(", ")}
				 FROM json_each(?2) ORDER BY key RETURNING userid, userkey, created_at`,
			)
			.bind(appid, json, now),
		db
			.prepare(
				`UPDATE users SET referrer_userid = (SELECT r.userid FROM users r, json_each(?1) j
				     WHERE json_extract(j.value, '$.userkey') = users.userkey AND r.userkey = json_extract(j.value, '$.referrerkey'))
				 WHERE userkey IN (SELECT ${field("userkey")} FROM json_each(?1) WHERE ${field("referrerkey")} IS NOT NULL)`,
			)
			.bind(json),
		db
			.prepare(
				`UPDATE users SET friends_count = friends_count + (SELECT ${field("n")} FROM json_each(?1)
				     WHERE ${field("id")} = users.userid OR ${field("key")} = users.userkey)
				 WHERE userid IN (SELECT ${field("id")} FROM json_each(?1))
				    OR userkey IN (SELECT ${field("key")} FROM json_each(?1))`,
			)
			.bind(counts),
		auditStatement(db, audit),
		// The referred users' pointers for their ledgers (issue 49): the referrer's key and the velocity count, which is
		// one per referrer (every row of the import is attributed at the same moment): one range count per referrer on
		// users_referrer_attributed, not one per friend.
		db
			.prepare(
				`WITH mine AS (SELECT userkey, referrer_userid, attributed_at FROM users
				   WHERE appid = ?1 AND userkey IN (SELECT ${field("userkey")} FROM json_each(?2) WHERE ${field("referred")} = 1)),
				 counts AS (SELECT g.referrer_userid, (SELECT COUNT(*) FROM users o WHERE o.referrer_userid = g.referrer_userid
				     AND o.attributed_at <= g.at AND o.attributed_at > strftime('%Y-%m-%dT%H:%M:%fZ', g.at, '-1 hour')) AS recent
				   FROM (SELECT referrer_userid, MAX(attributed_at) AS at FROM mine GROUP BY referrer_userid) g)
				 SELECT m.userkey, r.userkey AS referrerkey, c.recent FROM mine m JOIN users r ON r.userid = m.referrer_userid
				   JOIN counts c ON c.referrer_userid = m.referrer_userid`,
			)
			.bind(appid, json),
	]);
	return { inserted: rowsOf<ImportedUser>(results[0]), pointers: rowsOf<ImportedPointer>(results.at(-1)) };
}

/** A referred imported user's pointer: its referrer's key and the velocity count fixed at its attribution. */
export interface ImportedPointer {
	userkey: string;
	referrerkey: string;
	recent: number;
}
