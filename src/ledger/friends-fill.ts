import { type D1FriendRow, friendsBelow } from "../db/friends-fill";
import { type FriendRecord, friendsState, rememberFriends, writeFriendsState } from "./friends";
import type { LedgerWriter } from "./writer";

/** Friends copied per page: one D1 round trip and one ledger transaction each. */
export const FILL_PAGE = 500;
/** Pages a read (getfriendsandrewards, the share page) lets the fill copy before it answers from D1 instead: 10,000 friends. */
export const FILL_PAGES_PER_READ = 20;

export const toFriendRecord = (row: D1FriendRow): FriendRecord => ({
	userkey: row.userkey,
	userid: row.userid,
	email: row.email,
	useraccountid: row.useraccountid,
	name: row.name,
	profileimage: row.profileimage,
	status: row.status,
	registeredAt: row.created_at,
	attributedAt: row.attributed_at,
});

/**
 * The upgrade of a referrer written before its ledger kept friends (issue 49
 * piece 4): copies its friends from D1, newest first, at most `maxPages`
 * pages of FILL_PAGE, each page in one transaction with the fill's position
 * (`meta` 'friends' cursor), and marks the ledger filled after the last. A
 * friend the ledger has already (written since, by attribution, conversion,
 * profile change or erasure) keeps what the ledger has, only its status is
 * raised (friends.ts), so a page read before such a write cannot undo it.
 * Answers whether the ledger is filled. Runs once per ledger at a time (the
 * caller shares the promise).
 *
 * The repair: a filled ledger that keeps fewer friends than D1 counts
 * (`referrer.friends`, D1's `friends_count`, written in the attribution's
 * own batch) missed one: an attribution whose ledger call failed after D1's
 * write (operations/friend-ledger.ts), or one still in flight. It is filled
 * again (the merge keeps what it has), once per D1 count (`checked`), so a
 * count that drifted from the rows (a test twin's reset) costs one refill,
 * not one per read. Until that refill ends, reads answer from D1.
 */
export async function fillFriends(
	writer: LedgerWriter,
	db: D1Database,
	/** The referrer's D1 userid, and its friend count in D1. */
	referrer: { userid: number; friends: number },
	maxPages: number,
): Promise<boolean> {
	// No ledger and no friend in D1: nothing to copy, and no ledger is made for it (its first friend marks it filled).
	if (!writer.hasSchema() && referrer.friends === 0) return false;
	for (let page = 0; page < maxPages; page++) {
		const now = writer.hasSchema() ? friendsState(writer.sql) : null;
		if (now?.filled && (now.total >= referrer.friends || (now.checked ?? 0) >= referrer.friends)) return true;
		if (now?.filled)
			writer.transactionSync(() => writeFriendsState(writer.sql, { ...now, filled: false, cursor: null, checked: referrer.friends }));
		const cursor = writer.hasSchema() ? friendsState(writer.sql).cursor : null;
		const rows = await friendsBelow(db, referrer.userid, cursor, FILL_PAGE);
		const done = writer.transactionSync(() => {
			const state = rememberFriends(writer.sql, rows.map(toFriendRecord), "filled");
			// The position moves to the page's last (oldest) friend; a short page was the last.
			const last = rows.at(-1);
			const next = { ...state, cursor: last ? last.userid : state.cursor, filled: rows.length < FILL_PAGE };
			writeFriendsState(writer.sql, next);
			return next.filled;
		});
		if (done) return true;
	}
	return false;
}
