import { campaignFoundLookup, type Distribution } from "./campaigns";
import { firstRowOf, rowsOf } from "./rows";
import type { D1Reader } from "./session";
import { type FriendRow, friendsPageLookup, referrerLookup, toUser, type User, type UserRef, type UserRow, userLookup } from "./users";

/**
 * A user read together with what its operation checks about it, in one D1
 * round trip (one batch). Each answers null when the ref names no column to
 * look the user up by, or (where the user is required) when `db` does not
 * know the user.
 */

/** The user's key and whether the campaign is the app's (getuserbalance); `campaignAppid`: App.campaignAppid. */
export async function findUserAndCampaign(
	db: D1Reader,
	appid: string,
	ref: UserRef,
	campaignid: number,
	campaignAppid: string,
): Promise<{ userkey: string; erasedAt: string | null; campaignFound: boolean } | null> {
	const lookup = userLookup(db, appid, ref);
	if (!lookup) return null;
	const [userResult, campaignResult] = await db.batch([lookup, campaignFoundLookup(db, campaignAppid, campaignid)]);
	const row = firstRowOf<UserRow>(userResult);
	return row
		? { userkey: row.userkey, erasedAt: row.erased_at, campaignFound: firstRowOf<{ found: number }>(campaignResult) !== undefined }
		: null;
}

/** The user and the distribution of the campaign asked for, `campaign` null when that is not the app's (redeemrewards). */
export async function findUserAndDistribution(
	db: D1Database,
	appid: string,
	ref: UserRef,
	campaignid: number | undefined,
	campaignAppid: string,
): Promise<{ user: User; campaign: { distribution: Distribution } | null } | null> {
	const lookup = userLookup(db, appid, ref);
	if (!lookup) return null;
	const [userResult, campaignResult] = await db.batch([
		lookup,
		db.prepare("SELECT distribution FROM campaigns WHERE campaignid = ? AND appid = ?").bind(campaignid ?? null, campaignAppid),
	]);
	const row = firstRowOf<UserRow>(userResult);
	if (!row) return null;
	return { user: toUser(row), campaign: firstRowOf<{ distribution: Distribution }>(campaignResult) ?? null };
}

/** The user (as stored) and one page of its friends (getfriendsandrewards). */
export async function findUserAndFriendsPage(
	db: D1Reader,
	appid: string,
	ref: UserRef,
	limit: number,
	offset: number,
): Promise<{ user: UserRow; friends: FriendRow[] } | null> {
	const lookup = userLookup(db, appid, ref);
	const page = friendsPageLookup(db, appid, ref, limit, offset);
	if (!lookup || !page) return null;
	const [userResult, friendsResult] = await db.batch([lookup, page]);
	const user = firstRowOf<UserRow>(userResult);
	return user ? { user, friends: rowsOf<FriendRow>(friendsResult) } : null;
}

/** The user and the owner of the referral code `code`, each null when absent (applyreferrercode). */
export async function findUserAndReferrer(
	db: D1Database,
	appid: string,
	ref: UserRef,
	code: string,
): Promise<{ user: User | null; referrer: User | null } | null> {
	const lookup = userLookup(db, appid, ref);
	if (!lookup) return null;
	const [userResult, referrerResult] = await db.batch<UserRow>([lookup, referrerLookup(db, appid, code)]);
	const userRow = userResult?.results[0];
	const referrerRow = referrerResult?.results[0];
	return { user: userRow ? toUser(userRow) : null, referrer: referrerRow ? toUser(referrerRow) : null };
}

/** A referrer and a friend, each null when absent (remindfriend). */
export async function findReferrerAndFriend(
	db: D1Database,
	appid: string,
	referrerRef: UserRef,
	friendRef: UserRef,
): Promise<{ referrer: User | null; friend: User | null } | null> {
	const referrer = userLookup(db, appid, referrerRef);
	const friend = userLookup(db, appid, friendRef);
	if (!referrer || !friend) return null;
	const [referrerResult, friendResult] = await db.batch<UserRow>([referrer, friend]);
	const referrerRow = referrerResult?.results[0];
	const friendRow = friendResult?.results[0];
	return { referrer: referrerRow ? toUser(referrerRow) : null, friend: friendRow ? toUser(friendRow) : null };
}
