import { nowIso } from "../domain/dates";
import { type D1FriendRow, FRIEND_COLUMNS } from "./friends-fill";
import { type Network, networkWrites } from "./identifiers";
import { firstRowOf } from "./rows";
import type { Profile } from "./users";

/**
 * A code is taken when another user has it, as its code or as an alias, in
 * any app: share links name a code without its app. Parameters: the code
 * (null: none asked), the app and the user key.
 */
const codeTaken = (code: string, appid: string, userkey: string) =>
	`(${code} IS NOT NULL AND (EXISTS (SELECT 1 FROM users t WHERE t.referralcode = ${code} AND NOT (t.appid = ${appid} AND t.userkey = ${userkey}))
	  OR EXISTS (SELECT 1 FROM referral_code_aliases a JOIN users t ON t.userid = a.userid
	             WHERE a.code = ${code} AND NOT (t.appid = ${appid} AND t.userkey = ${userkey}))))`;

export type ProfileUpdate =
	/** `friend`: the user as updated, with its referrer's userkey (null: none), for the referrer's ledger (issue 49 piece 4). */
	| { updated: true; friend: D1FriendRow & { referrerkey: string | null } }
	/** Why nothing changed: the user is absent (or erased), or another user of the app has the email or account id. */
	| { updated: false; found: boolean; erased: boolean; emailTaken: boolean; accountTaken: boolean; codeTaken: boolean };

/**
 * Changes only the profile fields given, and records the network, unless the
 * user is absent or erased or the new email or account id is another user's.
 * The guarded UPDATE and its diagnosis run in one transaction, so there is no
 * race between the uniqueness check and the write.
 */
export async function updateProfile(
	db: D1Database,
	appid: string,
	userkey: string,
	profile: Profile,
	network: Network,
	/** A new referral code (upper case already): the old one becomes an alias of the user (referral_code_aliases). */
	referralcode?: string,
): Promise<ProfileUpdate> {
	const { isexistinguser, ...text } = profile;
	const sets = Object.entries(text).map(([field]) => `${field} = ?`);
	if (isexistinguser !== undefined) sets.push("isexistinguser = ?");
	const values = [...Object.values(text), ...(isexistinguser === undefined ? [] : [isexistinguser ? 1 : 0])];
	if (referralcode !== undefined) {
		sets.push("referralcode = ?");
		values.push(referralcode);
	}
	const code = referralcode ?? null;
	const email = text.email ?? null;
	const account = text.useraccountid ?? null;
	const unique = {
		sql: `NOT EXISTS (SELECT 1 FROM users o WHERE o.appid = ? AND o.userkey <> ?
			  AND ((? IS NOT NULL AND o.email = ?) OR (? IS NOT NULL AND o.useraccountid = ?)))
			  AND NOT ${codeTaken("?", "?", "?")}`,
		args: [appid, userkey, email, email, account, account, code, code, appid, userkey, code, appid, userkey],
	};
	const now = nowIso();
	// With a new code: the code being replaced becomes an alias under the same guard as the UPDATE that replaces it, and
	// taking back one of its own old codes makes it the code again, no longer an alias. Without one, neither is sent.
	const aliasInsert =
		code === null
			? []
			: [
					db
						.prepare(
							`INSERT INTO referral_code_aliases (code, appid, userid, created_at)
							 SELECT referralcode, appid, userid, ? FROM users WHERE referralcode <> ? AND appid = ? AND userkey = ?
							   AND erased_at IS NULL AND ${unique.sql}
							 ON CONFLICT (code) DO NOTHING`,
						)
						.bind(now, code, appid, userkey, ...unique.args),
				];
	const aliasReclaim =
		code === null
			? []
			: [
					db
						.prepare("DELETE FROM referral_code_aliases WHERE code = ?1 AND userid = (SELECT userid FROM users WHERE referralcode = ?1)")
						.bind(code),
				];
	const results = await db.batch([
		...aliasInsert,
		db
			.prepare(
				`UPDATE users SET ${[...sets, "updated_at = ?"].join(", ")} WHERE appid = ? AND userkey = ? AND erased_at IS NULL AND ${unique.sql}
				 RETURNING ${FRIEND_COLUMNS}, (SELECT r.userkey FROM users r WHERE r.userid = users.referrer_userid) AS referrerkey`,
			)
			.bind(...values, now, appid, userkey, ...unique.args),
		...aliasReclaim,
		db
			.prepare(
				`SELECT EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2 AND erased_at IS NULL) AS found,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2 AND erased_at IS NOT NULL) AS erased,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?3 IS NOT NULL AND email = ?3) AS emailtaken,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?4 IS NOT NULL AND useraccountid = ?4) AS accounttaken,
				 ${codeTaken("?5", "?1", "?2")} AS codetaken`,
			)
			.bind(appid, userkey, email, account, code),
		...networkWrites(db, appid, userkey, network, unique),
	]);
	const update = results[aliasInsert.length];
	const diagnosis = results[aliasInsert.length + 1 + aliasReclaim.length];
	const friend = firstRowOf<D1FriendRow & { referrerkey: string | null }>(update);
	if (update?.meta.changes === 1 && friend) return { updated: true, friend };
	const why = firstRowOf<{ found: number; erased: number; emailtaken: number; accounttaken: number; codetaken: number }>(diagnosis);
	if (!why) throw new Error("updateuser's diagnosis returned no row");
	return {
		updated: false,
		found: why.found === 1,
		erased: why.erased === 1,
		emailTaken: why.emailtaken === 1,
		accountTaken: why.accounttaken === 1,
		codeTaken: why.codetaken === 1,
	};
}
