import type { D1Reader } from "./session";

/** A friend as D1's users row has it: what a referrer's ledger copies once (ledger/friends-fill.ts). */
export type D1FriendRow = {
	userid: number;
	userkey: string;
	email: string | null;
	useraccountid: string | null;
	name: string | null;
	profileimage: string | null;
	status: "SignUp" | "Converted";
	created_at: string;
	attributed_at: string | null;
};

/** The columns of a D1FriendRow, for a statement that answers one (a fill page, an attribution's RETURNING). */
export const FRIEND_COLUMNS = "userid, userkey, email, useraccountid, name, profileimage, status, created_at, attributed_at";

/**
 * One page of a referrer's friends, newest first, below `beforeUserid`
 * (null: from the newest), through the (referrer_userid, userid) index: the
 * fill of a referrer's ledger written before issue 49 (piece 4), once.
 */
export async function friendsBelow(
	db: D1Reader,
	referrerUserid: number,
	beforeUserid: number | null,
	limit: number,
): Promise<D1FriendRow[]> {
	const { results } = await db
		.prepare(`SELECT ${FRIEND_COLUMNS} FROM users WHERE referrer_userid = ?1 AND userid < ?2 ORDER BY userid DESC LIMIT ?3`)
		.bind(referrerUserid, beforeUserid ?? Number.MAX_SAFE_INTEGER, limit)
		.all<D1FriendRow>();
	return results;
}
