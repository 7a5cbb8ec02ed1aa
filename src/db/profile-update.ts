import { nowIso } from "../domain/dates";
import { type Network, networkWrites } from "./identifiers";
import { firstRowOf } from "./rows";
import type { Profile } from "./users";

export type ProfileUpdate =
	| { updated: true }
	/** Why nothing changed: the user is absent (or erased), or another user of the app has the email or account id. */
	| { updated: false; found: boolean; erased: boolean; emailTaken: boolean; accountTaken: boolean };

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
): Promise<ProfileUpdate> {
	const { isexistinguser, ...text } = profile;
	const sets = Object.entries(text).map(([field]) => `${field} = ?`);
	if (isexistinguser !== undefined) sets.push("isexistinguser = ?");
	const values = [...Object.values(text), ...(isexistinguser === undefined ? [] : [isexistinguser ? 1 : 0])];
	const email = text.email ?? null;
	const account = text.useraccountid ?? null;
	const unique = {
		sql: `NOT EXISTS (SELECT 1 FROM users o WHERE o.appid = ? AND o.userkey <> ?
			  AND ((? IS NOT NULL AND o.email = ?) OR (? IS NOT NULL AND o.useraccountid = ?)))`,
		args: [appid, userkey, email, email, account, account],
	};
	const [update, diagnosis] = await db.batch([
		db
			.prepare(
				`UPDATE users SET ${[...sets, "updated_at = ?"].join(", ")} WHERE appid = ? AND userkey = ? AND erased_at IS NULL AND ${unique.sql}`,
			)
			.bind(...values, nowIso(), appid, userkey, ...unique.args),
		db
			.prepare(
				`SELECT EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2 AND erased_at IS NULL) AS found,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2 AND erased_at IS NOT NULL) AS erased,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?3 IS NOT NULL AND email = ?3) AS emailtaken,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?4 IS NOT NULL AND useraccountid = ?4) AS accounttaken`,
			)
			.bind(appid, userkey, email, account),
		...networkWrites(db, appid, userkey, network, unique),
	]);
	if (update?.meta.changes === 1) return { updated: true };
	const why = firstRowOf<{ found: number; erased: number; emailtaken: number; accounttaken: number }>(diagnosis);
	if (!why) throw new Error("updateuser's diagnosis returned no row");
	return {
		updated: false,
		found: why.found === 1,
		erased: why.erased === 1,
		emailTaken: why.emailtaken === 1,
		accountTaken: why.accounttaken === 1,
	};
}
