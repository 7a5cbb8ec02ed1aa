import { Hono } from "hono";
import { z } from "zod";
import { type AdminUserRow, clicksOf, findAdminUser, friendsOf, searchUsers } from "../db/admin-users";
import { findApp } from "../db/apps";
import { shareLinkBase } from "../domain/public-origin";
import { userNotFound } from "../http/errors";
import { ledgerFor } from "../ledger/stub";
import { SHARE_PAGE_TTL_SECONDS, signSharePageUrl } from "../sharepage/signature";
import { requireAppId } from "./guard";
import { page, pageRequest } from "./paging";
import { type AdminEnv, callerOrigin } from "./principal";

/** Admin reads of an app's users (under /admin/v1, behind the admin token). */
export const userRoutes = new Hono<AdminEnv>();

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
		// Who referred them, in words (issue 48: the console names the referrer instead of the word "referrer").
		referreremail: row.referrer_email,
		referrername: row.referrer_name,
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
	const [userbalance, days, app] = await Promise.all([
		ledgerFor(c.env, appid, row.userkey).balance({}),
		clicksOf(c.env.DB, row.referralcode, CLICK_DAYS),
		findApp(c.env.DB, appid),
	]);
	// The user's hosted share page as getsharepage signs it (valid an hour), on the share origin, else the caller's.
	const exp = Math.floor(Date.now() / 1000) + SHARE_PAGE_TTL_SECONDS;
	const base = shareLinkBase(c.env) || callerOrigin(c);
	const sharepageurl = app ? await signSharePageUrl(base, app.privatekeyHash, appid, row.userkey, exp) : null;
	return c.json({
		user: userView(row),
		referrer: row.referrer_userkey
			? { userkey: row.referrer_userkey, email: row.referrer_email, name: row.referrer_name, referralcode: row.referrer_code }
			: null,
		sharepageurl,
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
