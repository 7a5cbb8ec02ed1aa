import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { scheduled } from "../../src/scheduled";
import type { createApp } from "../support/api";
import { expectBoardCountersAgree } from "../support/board-counters";
import { createOneDatabaseApp } from "../support/layout";

/**
 * Issue 47's review: migration 0040 recounted only the all-time leaderboard
 * counters under its rule (Suspicious rewards do not count); the current
 * month's and week's kept the friends of Suspicious rewards counted by the
 * old rule, so a referrer whose rewards were all Suspicious still topped
 * this month's and this week's boards. Migration 0047 queues every app with
 * counters, and the every-minute job recounts its current month and week.
 */

type App = Awaited<ReturnType<typeof createApp>>;
type Board = { leaderboard: { userkey: string; friendsconverted: number; earned: number }[] };

// The migration as `npm run migrate` applies it (the lead may renumber it; its name stays).
const MIGRATION =
	Object.values(import.meta.glob<string>("../../migrations/*_i47_leftovers.sql", { query: "?raw", import: "default", eager: true }))[0] ??
	"";

let nextCustomId = 1;
async function referrerWithFriends(app: App, n: number) {
	const ref = (await app.api<{ userkey: string; referralcode: string }>("register", { email: `r-${crypto.randomUUID()}@x.com` })).body;
	for (let i = 0; i < n; i++) {
		const friend = (
			await app.api<{ userkey: string }>("register", { email: `f-${crypto.randomUUID()}@x.com`, referrercode: ref.referralcode })
		).body;
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid: `recount-${nextCustomId++}`,
			growthhack: "SaaS_Referrals",
			transactionvalue: "10",
		});
		expect(res.status).toBe(200);
	}
	await ledgerFor(env, app.appid, ref.userkey).flush();
	return ref;
}

const board = async (app: App, period: string) =>
	(await app.api<Board>("getleaderboard", { period, limit: 100 })).body.leaderboard.map((e) => [e.userkey, e.friendsconverted, e.earned]);

async function runEveryMinuteJobs() {
	const ctx = createExecutionContext();
	await scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
	await waitOnExecutionContext(ctx);
}

describe("migration i47_leftovers (0047): this month's and week's counters recounted under 0040's rule", () => {
	it("a referrer whose friends' rewards are all Suspicious no longer tops this month's or this week's board", async () => {
		const app = await createOneDatabaseApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const sly = await referrerWithFriends(app, 3);
		const fair = await referrerWithFriends(app, 1);
		// Two friends whose rewards were Suspicious under the old rule and approved since: counted twice (below).
		const approved = await referrerWithFriends(app, 2);
		const statuses = async (ref: { userkey: string }, rewardstatus: string) => {
			const rewards = await ledgerFor(env, app.appid, ref.userkey).listRewards();
			const res = await app.api("changerewardstatus", { rewardslist: rewards.map((r) => ({ rewarddtlid: r.rewarddtlid, rewardstatus })) });
			expect(res.status).toBe(200);
			await ledgerFor(env, app.appid, ref.userkey).flush();
		};
		await statuses(sly, "Suspicious");
		// The month's and week's counters as the rule before 0040 left them: Sly's 3 Suspicious friends counted; and
		// Approved's 2 friends counted twice (their rewards were Suspicious, counted by the old rule, then approved
		// under the new one, which added them again). The all-time counters were recounted by 0040.
		await env.DB.prepare(
			`UPDATE leaderboard_counts SET friends = CASE userkey WHEN ?2 THEN 3 ELSE 4 END, earned = CASE userkey WHEN ?2 THEN 15 ELSE 20 END
			 WHERE appid = ?1 AND userkey IN (?2, ?3) AND bucket <> 'all'`,
		)
			.bind(app.appid, sly.userkey, approved.userkey)
			.run();
		for (const period of ["month", "week"]) {
			expect(await board(app, period)).toEqual([
				[approved.userkey, 4, 20],
				[sly.userkey, 3, 15],
				[fair.userkey, 1, 5],
			]);
		}

		// The migration queues the apps with counters; the every-minute job recounts them.
		const queue = /INSERT INTO leaderboard_recounts[^;]*;/.exec(MIGRATION)?.[0];
		if (queue) await env.DB.prepare(queue).run();
		// Other test files' apps share this database and were queued too: only this app's recount is under test here
		// (and a run does at most 10 chunks, which theirs could take).
		await env.DB.prepare("DELETE FROM leaderboard_recounts WHERE appid <> ?").bind(app.appid).run();
		await runEveryMinuteJobs();

		for (const period of ["month", "week", "all"]) {
			expect(await board(app, period)).toEqual([
				[approved.userkey, 2, 10],
				[fair.userkey, 1, 5],
			]);
		}
		await expectBoardCountersAgree(app.appid);
		// Done: the app left the queue, and a later flush moves the recounted counters as usual.
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM leaderboard_recounts WHERE appid = ?").bind(app.appid).first()).toEqual({
			n: 0,
		});
		await statuses(sly, "Approved");
		expect((await board(app, "month"))[0]).toEqual([sly.userkey, 3, 15]);
		await expectBoardCountersAgree(app.appid);
	});

	it("recounts in chunks from where the last chunk stopped", async () => {
		const app = await createOneDatabaseApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const refs = [];
		for (let i = 0; i < 5; i++) refs.push(await referrerWithFriends(app, 1));
		// Every referrer's month counter says 2 friends where it has 1.
		await env.DB.prepare("UPDATE leaderboard_counts SET friends = 2, earned = 10 WHERE appid = ? AND bucket LIKE 'month:%'")
			.bind(app.appid)
			.run();
		// Only this app queued: other test files' apps share this database (the chunk counts below are this app's).
		await env.DB.prepare("DELETE FROM leaderboard_recounts").run();
		await env.DB.prepare("INSERT INTO leaderboard_recounts (appid) VALUES (?)").bind(app.appid).run();
		const { recountCurrentBoards } = await import("../../src/operations/leaderboard-recount");
		// 5 referrers, 3 counter rows each (all, month, week), chunks of 2 rows: a chunk takes its last referrer's rows
		// whole, so one referrer a chunk, then the end (10 chunks a run at most).
		expect(await recountCurrentBoards(env, Date.now(), 2)).toEqual({ chunks: 5, appsDone: 1 });
		expect((await board(app, "month")).map((e) => e.slice(1))).toEqual(Array(5).fill([1, 5]));
		await expectBoardCountersAgree(app.appid);
	});
});
