import { z } from "zod";
import { readAppBoard } from "../db/leaderboard-shards";
import { bucketOf, rankBoard } from "../domain/leaderboard";
import { campaignNotFound, userErased, userNotFound } from "../http/errors";
import { optionalCampaignId, optionalId } from "../http/fields";
import { defineOperation } from "../http/operation";

/** `period` and `limit` of a board, shared by the public operation (the admin API has its own query schema). */
export const leaderboardPeriod = z.enum(["all", "month", "week"]).optional().default("all");
const limit = z.coerce.number().int().min(1, "must be 1 to 100").max(100, "must be 1 to 100").optional().default(10);

/**
 * getleaderboard (issue 34, docs/rewards.md "Leaderboards"): a campaign's
 * referrers ranked by distinct friends with a rewarded event in the period
 * (local to the app's time zone), and where `userkey` stands. One D1 round
 * trip over maintained counters: never a scan of the app's users.
 */
export const getleaderboard = defineOperation({
	schema: z.object({
		campaignid: optionalCampaignId,
		period: leaderboardPeriod,
		limit,
		userkey: optionalId,
	}),
	async handle({ env, app }, input) {
		const campaignid = input.campaignid ?? app.defaultCampaignId;
		if (campaignid === null) throw campaignNotFound();
		const bucket = bucketOf(input.period, app.timezone, Date.now());
		const board = await readAppBoard(env, app.layout, {
			appid: app.appid,
			campaignAppid: app.campaignAppid,
			campaignid,
			bucket: bucket.key,
			limit: input.limit,
			userkey: input.userkey ?? null,
		});
		if (!board.campaignFound) throw campaignNotFound();
		const leaderboard = rankBoard(board.rows, board.nameStyle);
		if (input.userkey === undefined) return { leaderboard };
		if (!board.standing) throw userNotFound();
		if (board.standing.erased) throw userErased();
		return { leaderboard, user: { rank: board.standing.rank, friendsconverted: board.standing.friends } };
	},
});
