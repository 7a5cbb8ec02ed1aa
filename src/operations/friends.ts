import { z } from "zod";
import { readSession } from "../db/session";
import { findUserAndFriendsPage } from "../db/user-reads";
import { formatDayMonthYear } from "../domain/dates";
import { refuseErased, userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId, optionalPositiveInt } from "../http/fields";
import { defineOperation } from "../http/operation";
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
 * `convertedfriends` count the whole set, from counters kept on the user.
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
		// The nearest replica first; a user it does not know (yet) is asked of the primary before a 404.
		const found =
			(await findUserAndFriendsPage(readSession(env.DB), app.appid, input, pagesize, offset)) ??
			(await findUserAndFriendsPage(env.DB, app.appid, input, pagesize, offset));
		if (!found) throw userNotFound();
		const { user, friends } = found;
		refuseErased({ erasedAt: user.erased_at });
		// Typed here: with @types/node in node_modules (a dependency of Scalar's package) the RPC result and {} no longer unify.
		const earned: Record<string, { rewards: RewardView[]; total: number }> =
			friends.length > 0
				? await ledgerFor(env, app.appid, user.userkey).rewardsForFriends(
						friends.map((f) => f.userkey),
						EARNED_REWARDS_LIMIT,
						// The user sees these rewards: their coupon codes can no longer go back to the pool (docs/rewards.md).
						true,
					)
				: {};
		return {
			friends: friends.map((friend) => ({
				userkey: friend.userkey,
				email: friend.email ?? "",
				useraccountid: friend.useraccountid ?? "",
				name: friend.name ?? "",
				profileimage: friend.profileimage ?? "",
				status: friend.status,
				regdate: formatDayMonthYear(friend.created_at),
				earnedrewards: earned[friend.userkey]?.rewards ?? [],
				earnedrewardstotal: earned[friend.userkey]?.total ?? 0,
			})),
			totalfriends: user.friends_count,
			convertedfriends: user.converted_friends_count,
			pageindex,
			pagesize,
		};
	},
});
