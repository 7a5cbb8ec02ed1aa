import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../support/api";
import { until } from "../support/until";

/**
 * Issue 33: rows written per conversion. D1 bills every row and index entry a
 * statement writes (`meta.rows_written`); a recorded event writes its row and
 * one entry in each index that answers a read, no more.
 */
describe("rows a conversion event writes to D1", () => {
	it("its row, its (app, customid) key, conversion_events_first and the grants-pending mark: 4 rows", async () => {
		const app = await createApp();
		const referrer = (await app.api<{ referralcode: string }>("register", { email: "rows-ref@x.com" })).body;
		const friend = (await app.api<{ userkey: string }>("register", { email: "rows-fr@x.com", referrercode: referrer.referralcode })).body;
		const user = await env.DB.prepare("SELECT userid FROM users WHERE userkey = ?").bind(friend.userkey).first<{ userid: number }>();
		const insert = await env.DB.prepare(
			`INSERT INTO conversion_events (appid, customid, userid, eventname, campaignid, growthhack, created_at, decision, grants_pending)
			 VALUES (?, 'rows-1', ?, 'Purchase', ?, 'SaaS_Referrals', ?, '[]', 1)`,
		)
			.bind(app.appid, user?.userid, app.campaignid, new Date().toISOString())
			.run();
		// 6 before migration 0034 (conversion_events_user repeated the leading column of conversion_events_first), 5 before
		// 0038 (AUTOINCREMENT wrote the table's row in sqlite_sequence with every event).
		expect(insert.meta.rows_written).toBe(4);
		// A person's events (export, erasure) are still found by userid, in the order they were recorded.
		await env.DB.prepare(
			`INSERT INTO conversion_events (appid, customid, userid, eventname, campaignid, growthhack, created_at)
			 VALUES (?, 'rows-0', ?, 'Signup', ?, 'SaaS_Referrals', '2020-01-01T00:00:00.000Z')`,
		)
			.bind(app.appid, user?.userid, app.campaignid)
			.run();
		const events = await env.DB.prepare("SELECT customid FROM conversion_events WHERE userid = ? ORDER BY eventid")
			.bind(user?.userid)
			.all();
		expect(events.results.map((e) => e.customid)).toEqual(["rows-1", "rows-0"]);
	});

	it("the friend's move to Converted writes its row alone, and the referrer's count and the stats still move once", async () => {
		const app = await createApp();
		const referrer = (await app.api<{ referralcode: string; userkey: string }>("register", { email: "conv-ref@x.com" })).body;
		const friend = (await app.api<{ userkey: string }>("register", { email: "conv-fr@x.com", referrercode: referrer.referralcode })).body;
		const user = await env.DB.prepare("SELECT userid FROM users WHERE userkey = ?").bind(friend.userkey).first<{ userid: number }>();
		// 2 before migration 0037: users_conversion indexed the batch's token.
		const move = await env.DB.prepare("UPDATE users SET conversion_id = 'token-x', updated_at = ? WHERE userid = ?")
			.bind(new Date().toISOString(), user?.userid)
			.run();
		expect(move.meta.rows_written).toBe(1);
		await env.DB.prepare("UPDATE users SET conversion_id = NULL WHERE userid = ?").bind(user?.userid).run();
		// Through the operation: a purchase converts the friend; a replay and a second purchase do not count again.
		for (const customid of ["901", "901", "902"]) {
			const res = await app.api("registerconversionevent", {
				userkey: friend.userkey,
				customid,
				eventname: "Purchase",
				growthhack: "SaaS_Referrals",
				transactionvalue: 10,
			});
			expect(res.status).toBe(200);
		}
		// D1's rows of the events, and what they move, follow the projection (issue 49): read once both events are there.
		await until(
			"both events in D1",
			() => env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(app.appid).first<{ n: number }>(),
			(row) => row?.n === 2,
		);
		const counted = await env.DB.prepare(
			`SELECT (SELECT converted_friends_count FROM users WHERE userkey = ?1) AS converted,
			   (SELECT SUM(conversions) FROM stats_referrer_daily WHERE appid = ?2) AS daily,
			   (SELECT SUM(value) FROM stats_slots WHERE appid = ?2 AND metric = 'conversions') AS slots`,
		)
			.bind(referrer.userkey, app.appid)
			.first();
		expect(counted).toEqual({ converted: 1, daily: 1, slots: 1 });
	});
});
