import { Hono } from "hono";
import { readStats } from "../db/stats";
import { shapeStats } from "../domain/stats";
import { badRequest } from "../http/errors";
import { requireAppId } from "./guard";
import { campaignFilter } from "./rewards";

/** The app's analytics per UTC day, from the counters of migration 0006 (under /admin/v1). */
export const statsRoutes = new Hono<{ Bindings: Env }>();

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DAYS = 731;
const today = () => new Date().toISOString().slice(0, 10);
const shift = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

function day(raw: string | undefined, name: "from" | "to", fallback: string): string {
	if (!raw) return fallback;
	if (!DAY.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`)) || shift(raw, 0) !== raw) {
		throw badRequest(`${name} must be a day as YYYY-MM-DD.`, { fields: [name] });
	}
	return raw;
}

/** The range asked for: `to` defaults to today, `from` to 29 days before `to`. */
export function statsRange(rawFrom: string | undefined, rawTo: string | undefined): { from: string; to: string } {
	const to = day(rawTo, "to", today());
	const from = day(rawFrom, "from", shift(to, -29));
	if (from > to) throw badRequest("from must not be after to.", { fields: ["from"] });
	if (Date.parse(to) - Date.parse(from) > (MAX_DAYS - 1) * 86_400_000) {
		throw badRequest(`A range covers at most ${MAX_DAYS} days.`, { fields: ["from"] });
	}
	return { from, to };
}

statsRoutes.get("/apps/:appid/stats", async (c) => {
	const appid = c.req.param("appid");
	const { from, to } = statsRange(c.req.query("from"), c.req.query("to"));
	const campaignid = campaignFilter(c.req.query("campaignid"));
	await requireAppId(c.env.DB, appid);
	const { cells, top } = await readStats(c.env.DB, { appid, campaignid, from, to });
	return c.json({ from, to, campaignid, ...shapeStats(cells, from, to), topreferrers: top });
});
