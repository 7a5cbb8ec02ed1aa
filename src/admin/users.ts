import { Hono } from "hono";
import { z } from "zod";
import { type AdminUserRow, clicksOf, findAdminUser, friendsOf, searchUsers } from "../db/admin-users";
import { userNotFound } from "../http/errors";
import { ledgerFor } from "../ledger/stub";
import { requireAppId } from "./guard";
import { page, pageRequest } from "./paging";

/** Admin reads of an app's users (under /admin/v1, behind the admin token). */
export const userRoutes = new Hono<{ Bindings: Env }>();

const userCursor = z.tuple([z.number().int().positive()]);

export function userView(row: AdminUserRow) {
	return {
		userkey: row.userkey,
		email: row.email,
		useraccountid: row.useraccountid,
		name: row.name,
		phone: row.phone,
		referralcode: row.referralcode,
		campaignid: row.campaignid,
		status: row.status,
		referreruserkey: row.referrer_userkey,
		friends: row.friends_count,
		converted: row.converted_friends_count,
		createdat: row.created_at,
	};
}

/** Search by email / useraccountid / userkey prefix or exact referral code; newest first. */
userRoutes.get("/apps/:appid/users", async (c) => {
	const appid = c.req.param("appid");
	const { limit, after } = pageRequest(c, userCursor);
	const q = c.req.query("q")?.trim() || null;
	await requireAppId(c.env.DB, appid);
	const rows = await searchUsers(c.env.DB, appid, q, after?.[0] ?? null, limit + 1);
	const { items, nextcursor } = page(rows, limit, (r) => [r.userid]);
	return c.json({ users: items.map(userView), nextcursor });
});

const CLICK_DAYS = 90;

/** The profile, its referrer, its balance (all campaigns, as getuserbalance) and its share-link clicks. */
userRoutes.get("/apps/:appid/users/:userkey", async (c) => {
	const appid = c.req.param("appid");
	const row = await findAdminUser(c.env.DB, appid, c.req.param("userkey"));
	if (!row) throw userNotFound();
	const [userbalance, days] = await Promise.all([
		ledgerFor(c.env, appid, row.userkey).balance({}),
		clicksOf(c.env.DB, row.referralcode, CLICK_DAYS),
	]);
	return c.json({
		user: userView(row),
		referrer: row.referrer_userkey
			? { userkey: row.referrer_userkey, email: row.referrer_email, name: row.referrer_name, referralcode: row.referrer_code }
			: null,
		userbalance,
		clicks: { total: days.reduce((sum, d) => sum + d.clicks, 0), days },
	});
});

/** The user's friends, newest first. */
userRoutes.get("/apps/:appid/users/:userkey/friends", async (c) => {
	const appid = c.req.param("appid");
	const { limit, after } = pageRequest(c, userCursor);
	const row = await findAdminUser(c.env.DB, appid, c.req.param("userkey"));
	if (!row) throw userNotFound();
	const rows = await friendsOf(c.env.DB, row.userid, after?.[0] ?? null, limit + 1);
	const { items, nextcursor } = page(rows, limit, (r) => [r.userid]);
	return c.json({ friends: items.map(userView), nextcursor });
});
