import { z } from "zod";
import { rewardsForFriends } from "./reads";
import { readLedgerJson } from "./stored-json";
import type { RewardView } from "./types";

/**
 * The referrer's friends in its own ledger (issue 49 piece 4, ledger schema
 * step 15): what getfriendsandrewards and the share page's counts read
 * instead of D1. Every write goes through `rememberFriends`, in the caller's
 * transaction, which keeps the counts beside the rows (`meta` 'friends'), so
 * a page and its counts cost the page, never the number of friends.
 *
 * Who writes, and what each write may change (docs/scaling.md, "Built on
 * this branch: the friends page from the referrer's ledger"):
 *
 * - `attributed` (attribution, operations/attribution.ts) and `filled` (the
 *   fill from D1, friends-fill.ts): insert the friend if absent; else only
 *   raise its status (a row already here was written after D1's row was read).
 * - `converted` (the conversion's grant in this ledger): the status becomes
 *   `Converted`; inserts the friend if absent (a fill not yet done, or an
 *   attribution whose ledger write failed).
 * - `profile` (updateuser, with the fields D1 holds after the update): sets
 *   the shown fields, unless the friend was erased; inserts if absent.
 * - `erased` (the friend's erasure, before D1's): clears the shown fields
 *   for good (`erased_at`); inserts the cleared row if absent, so a fill page
 *   read before the erasure cannot bring them back.
 *
 * Status names are D1's `users.status` (SignUp, Converted), as the API answers them.
 */

export type FriendStatus = "SignUp" | "Converted";

/** One friend as the referrer's ledger keeps it, and as D1's users row gives it. */
export interface FriendRecord {
	userkey: string;
	/** D1's userid: the page's order (newest first), as D1's page had it. */
	userid: number;
	email: string | null;
	useraccountid: string | null;
	name: string | null;
	profileimage: string | null;
	status: FriendStatus;
	/** The friend's own registration (the API's `regdate`). */
	registeredAt: string;
	attributedAt: string | null;
}

export type FriendWrite = "attributed" | "filled" | "converted" | "profile" | "erased";

/** The counts and the fill's progress, one `meta` row (one row written per change, not two). */
const friendsStateSchema = z.object({
	total: z.number().int(),
	converted: z.number().int(),
	/** True once every friend D1 had before this ledger kept them is here (the fill, or a first friend with none before). */
	filled: z.boolean(),
	/** The fill's position: the lowest D1 userid copied so far (pages go newest first); null before the first page. */
	cursor: z.number().int().nullable(),
	/** The D1 friend count a refill was last started for (friends-fill.ts, the repair): at most one refill per count. */
	checked: z.number().int().optional(),
});
export type FriendsState = z.output<typeof friendsStateSchema>;

const EMPTY: FriendsState = { total: 0, converted: 0, filled: false, cursor: null };

/** The friends' counts and fill state; a ledger that never kept a friend has none (and is not filled). */
export function friendsState(sql: SqlStorage): FriendsState {
	const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'friends'").toArray()[0];
	return row ? readLedgerJson("meta", "value", row.value, friendsStateSchema) : { ...EMPTY };
}

export function writeFriendsState(sql: SqlStorage, state: FriendsState): void {
	sql.exec(
		"INSERT INTO meta (key, value) VALUES ('friends', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		JSON.stringify(state),
	);
}

type StoredFriend = { status: FriendStatus; erased_at: string | null };

/**
 * Writes `friends` as `how` says (see above), with the counts, in the
 * caller's transaction. `priorFriends`: how many friends D1 counted on the
 * referrer before this attribution; 0 on a ledger that never kept a friend
 * means there is nothing to fill from D1 (every later friend is written here
 * by its attribution). Answers the state after the write.
 */
export function rememberFriends(
	sql: SqlStorage,
	friends: FriendRecord[],
	how: FriendWrite,
	options: { priorFriends?: number; erasedAt?: string } = {},
): FriendsState {
	const before = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'friends'").toArray()[0];
	const state = friendsState(sql);
	if (!before && options.priorFriends === 0) state.filled = true;
	let changed = !before && state.filled;
	for (const friend of friends) {
		const stored = sql.exec<StoredFriend>("SELECT status, erased_at FROM friends WHERE userkey = ?", friend.userkey).toArray()[0];
		if (!stored) {
			insertFriend(sql, friend, how, options.erasedAt ?? null);
			state.total++;
			if (how === "converted" || friend.status === "Converted") state.converted++;
			changed = true;
			continue;
		}
		const converts = stored.status === "SignUp" && (how === "converted" || friend.status === "Converted");
		if (converts) {
			sql.exec("UPDATE friends SET status = 'Converted' WHERE userkey = ?", friend.userkey);
			state.converted++;
			changed = true;
		}
		if (how === "profile" && stored.erased_at === null) {
			sql.exec(
				"UPDATE friends SET email = ?, useraccountid = ?, name = ?, profileimage = ? WHERE userkey = ?",
				friend.email,
				friend.useraccountid,
				friend.name,
				friend.profileimage,
				friend.userkey,
			);
		}
		if (how === "erased") {
			sql.exec(
				`UPDATE friends SET email = NULL, useraccountid = NULL, name = NULL, profileimage = NULL, erased_at = COALESCE(erased_at, ?)
				 WHERE userkey = ?`,
				options.erasedAt ?? new Date().toISOString(),
				friend.userkey,
			);
		}
	}
	if (changed) writeFriendsState(sql, state);
	return state;
}

function insertFriend(sql: SqlStorage, friend: FriendRecord, how: FriendWrite, erasedAt: string | null): void {
	const erased = how === "erased";
	sql.exec(
		`INSERT INTO friends (userkey, userid, email, useraccountid, name, profileimage, status, registered_at, attributed_at, erased_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		friend.userkey,
		friend.userid,
		erased ? null : friend.email,
		erased ? null : friend.useraccountid,
		erased ? null : friend.name,
		erased ? null : friend.profileimage,
		how === "converted" ? "Converted" : friend.status,
		friend.registeredAt,
		friend.attributedAt,
		erased ? (erasedAt ?? new Date().toISOString()) : null,
	);
}

/** A friend of a page, as D1's page row had it. */
export type FriendPageRow = {
	userkey: string;
	email: string | null;
	useraccountid: string | null;
	name: string | null;
	profileimage: string | null;
	status: FriendStatus;
	registered_at: string;
};

/**
 * One page of friends, newest first (by D1 userid, through friends_page). A
 * page that starts at or beyond the count is empty without a scan; a page
 * deep in a long list steps over `offset` index entries, as D1's page did.
 */
export function friendsPageRows(sql: SqlStorage, state: FriendsState, limit: number, offset: number): FriendPageRow[] {
	if (offset >= state.total || limit <= 0) return [];
	return sql
		.exec<FriendPageRow>(
			`SELECT userkey, email, useraccountid, name, profileimage, status, registered_at FROM friends
			 ORDER BY userid DESC LIMIT ? OFFSET ?`,
			limit,
			offset,
		)
		.toArray();
}

/** Which page: `rewardsLimit` rewards per friend; `shownToUser` marks their coupon codes seen (reads.ts). */
export interface FriendsPageAsk {
	limit: number;
	offset: number;
	rewardsLimit: number;
	shownToUser: boolean;
}

/** A page of friends with the rewards each produced for this ledger's user (getfriendsandrewards). */
export interface FriendsPage {
	/** This ledger's own user was erased: the caller answers 410, as it would from D1. */
	erased: boolean;
	total: number;
	converted: number;
	friends: FriendPageRow[];
	earned: Record<string, { rewards: RewardView[]; total: number }>;
}

/**
 * The page from this ledger alone, or null while its friends are not all
 * here (the fill from D1 is not done): the caller then reads D1 as before.
 * The rewards come from the same ledger in the same transaction (reads.ts).
 */
export function friendsPage(
	sql: SqlStorage,
	userkey: string,
	page: FriendsPageAsk,
	/** This ledger's own user is erased (privacy.ts erasedAt, read by the caller: privacy.ts writes friends). */
	erased: boolean,
): FriendsPage | null {
	const state = friendsState(sql);
	if (!state.filled) return null;
	const base = { total: state.total, converted: state.converted };
	if (erased) return { erased: true, ...base, friends: [], earned: {} };
	const friends = friendsPageRows(sql, state, page.limit, page.offset);
	const earned =
		friends.length > 0
			? rewardsForFriends(
					sql,
					userkey,
					friends.map((f) => f.userkey),
					page.rewardsLimit,
					page.shownToUser,
				)
			: {};
	return { erased: false, ...base, friends, earned };
}
