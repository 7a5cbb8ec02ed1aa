import { Hono } from "hono";
import { z } from "zod";
import { listAudit } from "../db/audit";
import { badRequest } from "../http/errors";
import { requireAppId } from "./guard";
import { page, pageRequest } from "./paging";
import type { AdminEnv } from "./principal";

/**
 * The app's audit log (docs/operators.md), newest first, filtered by `action`
 * and `actor` (an email, a token's name, an apikey, "superuser"), or by
 * `targettype` with `targetid` (a reward's status history, say).
 */
export const auditRoutes = new Hono<AdminEnv>();

const filterText = (raw: string | undefined, name: string) => {
	const value = raw?.trim() ?? "";
	if (value.length > 254) throw badRequest(`${name} must have at most 254 characters.`, { fields: [name] });
	return value || null;
};

auditRoutes.get("/apps/:appid/audit", async (c) => {
	const appid = c.req.param("appid");
	const { limit, after } = pageRequest(c, z.tuple([z.number().int().positive()]));
	const targettype = filterText(c.req.query("targettype"), "targettype");
	const targetid = filterText(c.req.query("targetid"), "targetid");
	if (!targettype !== !targetid)
		throw badRequest("targettype and targetid go together.", { fields: [targettype ? "targetid" : "targettype"] });
	await requireAppId(c.env.DB, appid);
	const rows = await listAudit(c.env.DB, {
		appid,
		action: filterText(c.req.query("action"), "action"),
		actor: filterText(c.req.query("actor"), "actor"),
		target: targettype && targetid ? { type: targettype, id: targetid } : null,
		before: after?.[0] ?? null,
		limit: limit + 1,
	});
	const { items, nextcursor } = page(rows, limit, (r) => [r.seq]);
	return c.json({ entries: items, nextcursor });
});
