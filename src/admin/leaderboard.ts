import { Hono } from "hono";
import { findApp } from "../db/apps";
import { readAppBoard } from "../db/leaderboard-shards";
import type { ShardedEnv } from "../db/shards";
import { bucketOf, type LeaderboardPeriod, rankBoard } from "../domain/leaderboard";
import { ApiError, badRequest, campaignNotFound } from "../http/errors";
import type { AdminEnv } from "./principal";
import { campaignFilter } from "./rewards";

/**
 * The board of getleaderboard for operators (under /admin/v1; a viewer may read
 * it, as users and their emails): the same counters and ranks, each line with
 * the referrer's email (docs/rewards.md, "Leaderboards").
 */
export const leaderboardRoutes = new Hono<AdminEnv>();

const PERIODS: readonly LeaderboardPeriod[] = ["all", "month", "week"];

/** `period` and `limit` of a board read from a query string (the admin API's and the dashboard's). */
export function boardQuery(rawPeriod: string | undefined, rawLimit: string | undefined): { period: LeaderboardPeriod; limit: number } {
	const period = PERIODS.find((p) => p === (rawPeriod ?? "all"));
	if (!period) throw badRequest("period must be all, month or week.", { fields: ["period"] });
	const limit = rawLimit === undefined || rawLimit === "" ? 10 : Number(rawLimit);
	if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest("limit must be 1 to 100.", { fields: ["limit"] });
	return { period, limit };
}

/** The board of an app's campaign (default: the app's default campaign) with emails; null when the app is unknown. */
export async function operatorBoard(env: ShardedEnv, appid: string, raw: { campaignid?: string; period?: string; limit?: string }) {
	const app = await findApp(env.DB, appid);
	if (!app) return null;
	const { period, limit } = boardQuery(raw.period, raw.limit);
	const campaignid = campaignFilter(raw.campaignid) ?? app.defaultCampaignId;
	if (campaignid === null) throw campaignNotFound();
	const bucket = bucketOf(period, app.timezone, Date.now());
	const board = await readAppBoard(env, app.layout, {
		appid,
		campaignAppid: app.campaignAppid,
		campaignid,
		bucket: bucket.key,
		limit,
		userkey: null,
	});
	if (!board.campaignFound) throw campaignNotFound();
	const ranked = rankBoard(board.rows, board.nameStyle);
	return {
		campaignid,
		period,
		bucket: bucket.key,
		timezone: app.timezone,
		leaderboard: ranked.map((entry, i) => ({ ...entry, email: board.rows[i]?.email ?? null })),
	};
}

leaderboardRoutes.get("/apps/:appid/leaderboard", async (c) => {
	const board = await operatorBoard(c.env, c.req.param("appid"), {
		campaignid: c.req.query("campaignid"),
		period: c.req.query("period"),
		limit: c.req.query("limit"),
	});
	if (!board) throw new ApiError(404, "app_not_found", "No app with that appid.");
	return c.json(board);
});
