import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readStanding } from "../../src/db/leaderboard";
import { type ProjectedRow, type ProjectionMessage, writeProjectionBatch } from "../../src/db/projection-batch";
import { bucketOf, type LeaderboardPeriod } from "../../src/domain/leaderboard";
import { mulberry32 } from "../ledger/support";
import { admin, type createApp } from "../support/api";
import { expectBoardCountersAgree } from "../support/board-counters";
import { createOneDatabaseApp } from "../support/layout";
import { projectedRow } from "../support/projection";

/**
 * Issue 34: a user's rank sums maintained counters of the ties ahead of it
 * (leaderboard_ties, migration 0033) instead of counting them row by row.
 * Over a seeded board where most referrers tie, with their times clustered so
 * that ties share a year, a month, ... a second, even a millisecond, every
 * referrer's rank must equal a brute-force ranking of the counter rows
 * (friends, then reached_at, then userkey), in every period, after
 * reversals, stale replays and an erasure. The rewards reach D1 through the
 * projection queue's own batch (writeProjectionBatch: the versioned upsert
 * and the counters' statements), with the times the seed chose.
 */

type App = Awaited<ReturnType<typeof createApp>>;
const ZONE = "America/Los_Angeles";
const PERIODS: LeaderboardPeriod[] = ["all", "month", "week"];
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Reward {
	referrer: string;
	row: ProjectedRow;
}

const rewardRow = (seq: number, campaignid: number, friend: string, createdAt: string): ProjectedRow =>
	projectedRow(seq, { campaignid, rewardtype: "Credit", friend_userkey: friend, created_at: createdAt, updated_at: createdAt });

/** Writes the rewards as the projection consumer does, a few ledgers' messages per D1 batch. */
async function project(app: App, rewards: Reward[]) {
	const byReferrer = new Map<string, Reward[]>();
	for (const r of rewards) byReferrer.set(r.referrer, [...(byReferrer.get(r.referrer) ?? []), r]);
	const messages: ProjectionMessage[] = [...byReferrer].map(([userkey, list]) => ({
		projection: 1,
		appid: app.appid,
		userkey,
		sentAt: Date.now(),
		rewards: list.map(({ row }, i) => ({ id: i + 1, ref: `${userkey}-${row.seq}`, row })),
		webhooks: [],
		audits: [],
	}));
	for (let i = 0; i < messages.length; i += 8) {
		await writeProjectionBatch(env.DB, messages.slice(i, i + 8), new Map([[app.appid, ZONE]]), new Date().toISOString());
	}
}

interface CounterRow {
	userkey: string;
	friends: number;
	reached_at: string;
}

/** The board by brute force: every counter row of the bucket, sorted as the rank reads it. */
async function bruteForce(app: App, bucket: string): Promise<CounterRow[]> {
	const { results } = await env.DB.prepare(
		"SELECT userkey, friends, reached_at FROM leaderboard_counts WHERE appid = ? AND campaignid = ? AND bucket = ? AND friends > 0",
	)
		.bind(app.appid, app.campaignid, bucket)
		.all<CounterRow>();
	// Byte order, as SQLite compares texts (all ASCII here).
	const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
	return results.sort((a, b) => b.friends - a.friends || cmp(a.reached_at, b.reached_at) || cmp(a.userkey, b.userkey));
}

/** Every referrer's rank (and a bounded one) equals its place in the brute-force order, in every period. */
async function expectRanksAgree(app: App, referrers: string[], erased: ReadonlySet<string> = new Set()) {
	let ties = 0;
	for (const period of PERIODS) {
		const bucket = bucketOf(period, ZONE, Date.now()).key;
		const order = await bruteForce(app, bucket);
		const expected = new Map(order.map((row, i) => [row.userkey, i + 1]));
		for (const [i, userkey] of referrers.entries()) {
			const standing = await readStanding(env.DB, { appid: app.appid, campaignid: app.campaignid, bucket, userkey });
			expect(standing?.erased, userkey).toBe(erased.has(userkey));
			expect([period, userkey, standing?.rank]).toEqual([period, userkey, expected.get(userkey) ?? null]);
			// The share page's bounded read (a rank past `ahead` reads as `ahead + 1`), on every fourth referrer.
			if (i % 4 !== 0) continue;
			const bounded = await readStanding(env.DB, { appid: app.appid, campaignid: app.campaignid, bucket, userkey, ahead: 20 });
			const rank = expected.get(userkey);
			expect([period, userkey, bounded?.rank]).toEqual([period, userkey, rank === undefined ? null : Math.min(rank, 21)]);
		}
		ties += order.filter((row, i) => i > 0 && order[i - 1]?.friends === row.friends).length;
		// The operation reads the same: its top and a user's rank.
		const last = order[order.length - 1];
		if (last) {
			const res = await app.api<{ leaderboard: { userkey: string }[]; user: { rank: number } }>("getleaderboard", {
				period,
				limit: 100,
				userkey: last.userkey,
			});
			expect(res.body.user.rank).toBe(order.length);
			expect(res.body.leaderboard.map((e) => e.userkey)).toEqual(order.slice(0, 100).map((r) => r.userkey));
		}
	}
	await expectBoardCountersAgree(app.appid);
	return ties;
}

/** Pairs of tied rows (same count) in `order` whose reached_at first differ within each width: the seed reaches every slice. */
function firstDifferences(order: CounterRow[]): Set<number> {
	const widths = [4, 7, 10, 13, 16, 19];
	const seen = new Set<number>();
	for (let i = 1; i < order.length; i++) {
		const [a, b] = [order[i - 1], order[i]];
		if (!a || !b || a.friends !== b.friends) continue;
		const at = [...a.reached_at].findIndex((ch, k) => ch !== b.reached_at[k]);
		// The width whose slice first tells them apart (20: the same second, 24: the same instant, told apart by userkey).
		seen.add(at < 0 ? 24 : (widths.find((w) => at < w) ?? 20));
	}
	return seen;
}

describe("a leaderboard rank from the tie counters (issue 34, migration 0033)", () => {
	it("equals a brute-force ranking over a seeded board of many ties, after reversals, stale replays and an erasure", async () => {
		const rand = mulberry32(34_033);
		const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
		const app = await createOneDatabaseApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		expect((await admin("PATCH", `/apps/${app.appid}`, { timezone: ZONE })).status).toBe(200);
		const run = crypto.randomUUID().slice(0, 8);
		const n = 120;
		await env.DB.prepare(
			`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?4)
			 INSERT INTO users (appid, userkey, referralcode, campaignid, name, created_at, updated_at)
			 SELECT ?1, ?2 || printf('%03d', i), upper(?2) || i, ?3, 'Referrer ' || i, '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z' FROM s`,
		)
			.bind(app.appid, `tie${run}-`, app.campaignid, n)
			.run();
		const referrers = Array.from({ length: n }, (_, i) => `tie${run}-${String(i + 1).padStart(3, "0")}`);

		// Times clustered around a few instants with small offsets, so that ties share every prefix of their time, down
		// to the millisecond: fixed instants in the past, each one width apart from the one before (another year, month,
		// day, hour, minute, second, whatever the date of the run), and instants of this week for the month and week.
		const fixed = [
			"2023-05-14T08:30:15.250Z",
			"2024-05-14T08:30:15.250Z",
			"2024-08-14T08:30:15.250Z",
			"2024-08-20T08:30:15.250Z",
			"2024-08-20T15:30:15.250Z",
			"2024-08-20T15:45:15.250Z",
			"2024-08-20T15:45:40.250Z",
		].map(Date.parse);
		const now = Date.now();
		const recent = [0, 20 * SECOND, 7 * MINUTE, 3 * HOUR, 30 * HOUR, 3 * DAY].map((ago) => now - ago);
		const at = () => new Date(pick([...fixed, ...recent]) - pick([0, 0, 1, 2, SECOND])).toISOString();
		let seq = 0;
		const rewards: Reward[] = [];
		const give = (referrer: string, friend: string) => {
			const reward = { referrer, row: rewardRow(++seq, app.campaignid, friend, at()) };
			rewards.push(reward);
			return reward;
		};
		for (const referrer of referrers) {
			// Most bring one friend: the launch whose last referrer ties with most of the board.
			const friends = pick([1, 1, 1, 1, 1, 1, 2, 2, 3, 5]);
			for (let f = 0; f < friends; f++) {
				const friend = `${referrer}-f${f}`;
				give(referrer, friend);
				// A friend's second event counts the friend once.
				if (rand() < 0.2) give(referrer, friend);
			}
		}
		await project(app, rewards);
		expect(await expectRanksAgree(app, referrers)).toBeGreaterThan(150);
		const allTime = await bruteForce(app, "all");
		expect([...firstDifferences(allTime)].sort((a, b) => a - b)).toEqual([4, 7, 10, 13, 16, 19, 20, 24]);

		// Reversals: a full refund or a rejection takes a reward out, a partial refund keeps it; new friends come;
		// then the first versions arrive again, late (the version guard: nothing moves).
		const changed: Reward[] = [];
		for (const { referrer, row } of rewards) {
			const roll = rand();
			if (roll < 0.15) changed.push({ referrer, row: { ...row, reversed: row.amount, status: "Rejected", version: 2 } });
			else if (roll < 0.25) changed.push({ referrer, row: { ...row, status: "Rejected", version: 2 } });
			else if (roll < 0.35) changed.push({ referrer, row: { ...row, reversed: 200, version: 2 } });
		}
		const fresh = Array.from({ length: 40 }, (_, i) => give(pick(referrers), `late-${i}`));
		await project(app, [...changed, ...fresh]);
		await project(
			app,
			changed.map(({ referrer, row }) => ({ referrer, row: { ...row, reversed: 0, status: "Approved", version: 1 } })),
		);
		await expectRanksAgree(app, referrers);

		// An erasure deletes the referrer's counters: those behind it move up, in every slice it was counted in.
		const order = await bruteForce(app, "all");
		const gone = [order[1], order[Math.floor(order.length / 2)], order[order.length - 3]].map((r) => r?.userkey ?? "");
		for (const userkey of gone) expect((await admin("DELETE", `/apps/${app.appid}/users/${userkey}`)).status).toBe(200);
		// A flush of an erased referrer's that lands after the erasure adds nothing back (the counters' guard).
		await project(app, [give(gone[0] ?? "", "after-erasure")]);
		const erased = new Set(gone);
		await expectRanksAgree(app, referrers, erased);
		const left = await env.DB.prepare("SELECT COUNT(*) AS n FROM leaderboard_counts WHERE appid = ? AND userkey IN (?, ?, ?)")
			.bind(app.appid, ...gone)
			.first<{ n: number }>();
		expect(left?.n).toBe(0);

		// Migration 0033's count of the counters already there, then 0035's flags (only levels of many ties keep their
		// slices), give what the triggers kept (zero slices aside).
		const slicesNow = () =>
			env.DB.prepare(
				`SELECT campaignid, bucket, friends, width, slice, referrers FROM leaderboard_ties WHERE appid = ? AND referrers <> 0
				 ORDER BY campaignid, bucket, friends, width, slice`,
			)
				.bind(app.appid)
				.all();
		const kept = (await slicesNow()).results;
		const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0033_"));
		const backfill = migration?.queries.find((q) => /^\s*INSERT INTO leaderboard_ties\b/.test(q));
		expect(backfill).toBeDefined();
		const thresholds = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0035_"))?.queries.filter((q) =>
			/^\s*(--.*\n\s*)*(UPDATE leaderboard_levels SET ties = 1 WHERE referrers|DELETE FROM leaderboard_ties WHERE NOT EXISTS)\b/.test(q),
		);
		expect(thresholds?.length).toBe(2);
		await env.DB.batch(
			["UPDATE leaderboard_levels SET ties = 0", "DELETE FROM leaderboard_ties", backfill ?? "", ...(thresholds ?? [])].map((q) =>
				env.DB.prepare(q),
			),
		);
		expect((await slicesNow()).results).toEqual(kept);
	});
});
