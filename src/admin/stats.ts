import { Hono } from "hono";
import { findApp } from "../db/apps";
import { shardPool } from "../db/shards";
import { readStats } from "../db/stats";
import { shapeStats } from "../domain/stats";
import { localDay } from "../domain/time-zone";
import { ApiError, badRequest } from "../http/errors";
import type { AdminEnv } from "./principal";
import { campaignFilter } from "./rewards";

/** The app's analytics per local day of its time zone, from the counters of migration 0014 (under /admin/v1). */
export const statsRoutes = new Hono<AdminEnv>();

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DAYS = 731;
const shift = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

function day(raw: string | undefined, name: "from" | "to", fallback: string): string {
	if (!raw) return fallback;
	if (!DAY.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`)) || shift(raw, 0) !== raw) {
		throw badRequest(`${name} must be a day as YYYY-MM-DD.`, { fields: [name] });
	}
	return raw;
}

/** The range asked for: `to` defaults to today (in `zone`), `from` to 29 days before `to`. */
export function statsRange(rawFrom: string | undefined, rawTo: string | undefined, zone = "UTC"): { from: string; to: string } {
	const to = day(rawTo, "to", localDay(zone, Date.now()));
	const from = day(rawFrom, "from", shift(to, -29));
	if (from > to) throw badRequest("from must not be after to.", { fields: ["from"] });
	if (Date.parse(to) - Date.parse(from) > (MAX_DAYS - 1) * 86_400_000) {
		throw badRequest(`A range covers at most ${MAX_DAYS} days.`, { fields: ["from"] });
	}
	return { from, to };
}

statsRoutes.get("/apps/:appid/stats", async (c) => {
	const appid = c.req.param("appid");
	const app = await findApp(c.env.DB, appid);
	if (!app) throw new ApiError(404, "app_not_found", "No app with that appid.");
	const { from, to } = statsRange(c.req.query("from"), c.req.query("to"), app.timezone);
	const campaignid = campaignFilter(c.req.query("campaignid"));
	// A sharded app's reward counters are summed over its shards too (issue 50 phase 2b-1).
	const pool = app.layout === "sharded" ? await shardPool(c.env) : null;
	const { cells, top } = await readStats(c.env.DB, { appid, campaignid, from, to, zone: app.timezone }, pool);
	return c.json({ from, to, timezone: app.timezone, campaignid, ...shapeStats(cells, from, to), topreferrers: top });
});
