import { z } from "zod";
import { friendsPageLookup, type UserRow, userLookup } from "../db/users";
import { formatDayMonthYear } from "../domain/dates";
import { userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId, optionalPositiveInt } from "../http/fields";
import { defineOperation } from "../http/operation";
import { ledgerFor } from "../ledger/stub";
import type { RewardView } from "../ledger/types";

/** Largest page getfriendsandrewards returns; a larger `pagesize` is capped to it. */
export const MAX_PAGE_SIZE = 500;
const DEFAULT_PAGE_SIZE = 50;

/**
 * Operation 4: the user's friends, newest first, a page at a time, each with
 * the rewards that friend earned the user (all statuses). `totalfriends` and
 * `convertedfriends` count the whole set, from counters kept on the user.
 */
export const getfriendsandrewards = defineOperation({
	schema: z.object({
		userkey: id,
		email: optionalEmail,
		useraccountid: optionalId,
		pageindex: optionalPositiveInt,
		pagesize: optionalPositiveInt,
	}),
	async handle({ env, app }, input) {
		const pagesize = Math.min(input.pagesize ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
		const pageindex = input.pageindex ?? 1;
		const lookup = userLookup(env.DB, app.appid, input);
		const page = friendsPageLookup(env.DB, app.appid, input, pagesize, (pageindex - 1) * pagesize);
		if (!lookup || !page) throw userNotFound();
		const [userResult, friendsResult] = await env.DB.batch<UserRow>([lookup, page]);
		const user = userResult?.results[0];
		if (!user) throw userNotFound();
		const friends = friendsResult?.results ?? [];
		// Typed here: with @types/node in node_modules (a dependency of Scalar's package) the RPC result and {} no longer unify.
		const earned: Record<string, RewardView[]> =
			friends.length > 0 ? await ledgerFor(env, app.appid, user.userkey).rewardsForFriends(friends.map((f) => f.userkey)) : {};
		return {
			friends: friends.map((friend) => ({
				userkey: friend.userkey,
				email: friend.email ?? "",
				useraccountid: friend.useraccountid ?? "",
				name: friend.name ?? "",
				profileimage: friend.profileimage ?? "",
				status: friend.status,
				regdate: formatDayMonthYear(friend.created_at),
				earnedrewards: earned[friend.userkey] ?? [],
			})),
			totalfriends: user.friends_count,
			convertedfriends: user.converted_friends_count,
			pageindex,
			pagesize,
		};
	},
});
