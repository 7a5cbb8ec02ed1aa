import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";
import { projectionRows } from "../support/layout";
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

describe("rows a conversion rewarding both sides writes to the ledgers' outboxes (issue 49)", () => {
	it("the referrer's records ride in its friend's projection entry: the referrer writes no outbox row, the friend 2 (written, then deleted)", async () => {
		const rule = (rewardusertype: string) => ({ rewardusertype, eventname: "Purchase", reward: 5, rewardunit: "USD" });
		const app = await createApp({ rewardrules: [rule("Friend"), rule("Referrer")] });
		const referrer = (await app.api<{ referralcode: string; userkey: string }>("register", { email: "out-ref@x.com" })).body;
		const friend = (await app.api<{ userkey: string }>("register", { email: "out-fr@x.com", referrercode: referrer.referralcode })).body;
		const ledgers = { friend: ledgerFor(env, app.appid, friend.userkey), referrer: ledgerFor(env, app.appid, referrer.userkey) };
		let customid = 0;
		const convert = async (projected: number) => {
			const res = await app.api("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Purchase",
				customid: `out-${++customid}`,
				growthhack: "SaaS_Referrals",
			});
			expect(res.status).toBe(200);
			await until(
				"both rewards projected",
				() =>
					projectionRows<{ n: number }>("SELECT COUNT(*) AS n FROM rewards WHERE appid = ?", app.appid).then((r) =>
						r.reduce((sum, d) => sum + d.n, 0),
					),
				(n) => n === projected,
			);
			for (const stub of Object.values(ledgers))
				await until(
					"the outbox emptied",
					() => runInDurableObject(stub, (_l, state) => state.storage.sql.exec("SELECT ref FROM outbox").toArray()),
					(rows) => rows.length === 0,
				);
		};
		await convert(2);
		// Each ledger's statements on its outbox from now on, with the rows they wrote: the very SQL object its writer uses.
		const watch = (stub: DurableObjectStub<import("../../src/ledger/user-ledger").UserLedger>) =>
			runInDurableObject(stub, (ledger) => {
				const seen = { rows: 0 };
				const sql = Reflect.get(Reflect.get(ledger, "writer"), "sql") as SqlStorage;
				const exec = sql.exec;
				Object.defineProperty(sql, "exec", {
					configurable: true,
					value: (query: string, ...bindings: SqlStorageValue[]) => {
						const cursor = exec.call(sql, query, ...bindings);
						if (/\b(INSERT INTO|DELETE FROM|UPDATE) outbox\b/.test(query)) seen.rows += cursor.rowsWritten;
						return cursor;
					},
				});
				return seen;
			});
		const written = { friend: await watch(ledgers.friend), referrer: await watch(ledgers.referrer) };
		await convert(4);
		// Before: 2 each (the referrer's own entry written, carried, then deleted on the consumer's acknowledgement).
		expect({ friend: written.friend.rows, referrer: written.referrer.rows }).toEqual({ friend: 2, referrer: 0 });
	});
});
