import { z } from "zod";
import { readSession } from "../db/session";
import { findUserAndFriendsPage } from "../db/user-reads";
import { formatDayMonthYear } from "../domain/dates";
import { refuseErased, userErased, userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId, optionalPositiveInt } from "../http/fields";
import { defineOperation } from "../http/operation";
import type { FriendPageRow, FriendsPage } from "../ledger/friends";
import { FILL_PAGES_PER_READ } from "../ledger/friends-fill";
import { ledgerFor } from "../ledger/stub";
import type { RewardView } from "../ledger/types";

/** Largest page getfriendsandrewards returns; a larger `pagesize` is capped to it. */
export const MAX_PAGE_SIZE = 500;
const DEFAULT_PAGE_SIZE = 50;
/** Rewards listed per friend, newest first; `earnedrewardstotal` says how many there are. */
export const EARNED_REWARDS_LIMIT = 100;
/** Largest `pageindex` (a bound for the offset; a page beyond the last is empty and costs no scan). */
export const MAX_PAGE_INDEX = 10_000_000;

/**
 * Operation 4: the user's friends, newest first, a page at a time, each with
 * the rewards that friend earned the user (all statuses; the newest 100,
 * newest first, and `earnedrewardstotal`). `totalfriends` and
 * `convertedfriends` count the whole set. All of it from the user's ledger
 * (issue 49 piece 4, ledger/friends.ts) once its friends are there; until
 * then from D1 as before, while the ledger copies them (friends-fill.ts).
 */
export const getfriendsandrewards = defineOperation({
	schema: z.object({
		userkey: id,
		email: optionalEmail,
		useraccountid: optionalId,
		pageindex: optionalPositiveInt.pipe(z.number().max(MAX_PAGE_INDEX, `must be at most ${MAX_PAGE_INDEX}`).optional()),
		pagesize: optionalPositiveInt,
	}),
	async handle({ env, app }, input) {
		const pagesize = Math.min(input.pagesize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
		const pageindex = input.pageindex ?? 1;
		const offset = (pageindex - 1) * pagesize;
		const page = { pageindex, pagesize };
		// The user sees these rewards: their coupon codes can no longer go back to the pool (docs/rewards.md).
		const ask = { limit: pagesize, offset, rewardsLimit: EARNED_REWARDS_LIMIT, shownToUser: true };
		// The referrer's ledger keeps its friends (issue 49 piece 4): once they are all there, it answers alone, no D1.
		const ledger = ledgerFor(env, app.appid, input.userkey);
		const kept = await ledger.friendsPage(ask);
		if (kept) return fromLedger(kept, page);
		// Not yet (a user written before, or who never had a friend): D1 says whether the user exists, as before.
		// The nearest replica first; a user it does not know (yet) is asked of the primary before a 404.
		const found =
			(await findUserAndFriendsPage(readSession(env.DB), app.appid, input, pagesize, offset)) ??
			(await findUserAndFriendsPage(env.DB, app.appid, input, pagesize, offset));
		if (!found) throw userNotFound();
		const { user, friends } = found;
		refuseErased({ erasedAt: user.erased_at });
		// Then the ledger copies its friends from D1, once and a bounded number of pages per read; when done, it answers.
		const filled = (await ledger.fillFriends(
			app.appid,
			user.userkey,
			{ userid: user.userid, friends: user.friends_count },
			FILL_PAGES_PER_READ,
		))
			? await ledger.friendsPage(ask)
			: null;
		if (filled) return fromLedger(filled, page);
		// Typed here: with @types/node in node_modules (a dependency of Scalar's package) the RPC result and {} no longer unify.
		const earned: Record<string, { rewards: RewardView[]; total: number }> =
			friends.length > 0
				? await ledger.rewardsForFriends(
						friends.map((f) => f.userkey),
						EARNED_REWARDS_LIMIT,
						true,
					)
				: {};
		return {
			friends: friends.map((friend) => friendOf({ ...friend, registered_at: friend.created_at }, earned[friend.userkey])),
			totalfriends: user.friends_count,
			convertedfriends: user.converted_friends_count,
			...page,
		};
	},
});

/** One friend of the answer (api-spec.md, operation 4), from the ledger's row or D1's. */
function friendOf(
	friend: Omit<FriendPageRow, "status"> & { status: string },
	earned: { rewards: RewardView[]; total: number } | undefined,
) {
	return {
		userkey: friend.userkey,
		email: friend.email ?? "",
		useraccountid: friend.useraccountid ?? "",
		name: friend.name ?? "",
		profileimage: friend.profileimage ?? "",
		status: friend.status,
		regdate: formatDayMonthYear(friend.registered_at),
		earnedrewards: earned?.rewards ?? [],
		earnedrewardstotal: earned?.total ?? 0,
	};
}

/** The answer from the ledger's page: the same JSON as D1's (an erased user is 410, as from D1). */
function fromLedger(kept: FriendsPage, page: { pageindex: number; pagesize: number }) {
	if (kept.erased) throw userErased();
	return {
		friends: kept.friends.map((friend) => friendOf(friend, kept.earned[friend.userkey])),
		totalfriends: kept.total,
		convertedfriends: kept.converted,
		...page,
	};
}
