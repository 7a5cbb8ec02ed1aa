import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readStanding } from "../../src/db/leaderboard";
import { TIE_SLICES_FROM } from "../../src/db/leaderboard-ties";
import { mulberry32 } from "../ledger/support";
import { admin, type createApp } from "../support/api";
import { expectBoardCountersAgree } from "../support/board-counters";
import { createOneDatabaseApp } from "../support/layout";

/**
 * Issue 33, rows per conversion: tie slices (leaderboard_ties) only on a
 * level (board, count of friends) of TIE_SLICES_FROM referrers or more
 * (migration 0035). The write that brings a level there counts its slices
 * from the counters in the same statement and flags it; an unflagged level's
 * ties are counted on the rank index. Either way a rank must equal a
 * brute-force ranking of the counter rows (friends, then reached_at, then
 * userkey): across the threshold, crossed by an insert and by an update,
 * and after a flagged level shrinks by reversals and erasures. The counters
 * are written in single SQL statements, so the triggers run as they do under
 * the flush's upserts.
 */

type App = Awaited<ReturnType<typeof createApp>>;

interface CounterRow {
	userkey: string;
	friends: number;
	reached_at: string;
}

/** The board by brute force: every counter row of the bucket, sorted as the rank reads it (byte order, as SQLite compares). */
async function bruteForce(app: App): Promise<CounterRow[]> {
	const { results } = await env.DB.prepare(
		"SELECT userkey, friends, reached_at FROM leaderboard_counts WHERE appid = ? AND campaignid = ? AND bucket = 'all' AND friends > 0",
	)
		.bind(app.appid, app.campaignid)
		.all<CounterRow>();
	const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
	return results.sort((a, b) => b.friends - a.friends || cmp(a.reached_at, b.reached_at) || cmp(a.userkey, b.userkey));
}

/** Referrers to check: the first, the middle, the last, the first and last of each count, every tie of a few shared seconds, a random few. */
function sample(order: CounterRow[], rand: () => number): string[] {
	const picked = new Set<string>();
	const at = (i: number) => order[i]?.userkey;
	for (const i of [0, 1, Math.floor(order.length / 2), order.length - 2, order.length - 1]) picked.add(at(i) ?? "");
	for (let i = 1; i < order.length; i++) if (order[i]?.friends !== order[i - 1]?.friends) picked.add(at(i - 1) ?? "").add(at(i) ?? "");
	const seconds = new Map<string, string[]>();
	for (const row of order) {
		const key = `${row.friends} ${row.reached_at.slice(0, 19)}`;
		seconds.set(key, [...(seconds.get(key) ?? []), row.userkey]);
	}
	const shared = [...seconds.values()].filter((keys) => keys.length > 1);
	expect(shared.length).toBeGreaterThan(3);
	for (const keys of shared.slice(0, 3)) for (const k of keys) picked.add(k);
	for (let i = 0; i < 25; i++) picked.add(at(Math.floor(rand() * order.length)) ?? "");
	picked.delete("");
	return [...picked];
}

/** Each sampled referrer's rank, exact and bounded (the share page's), equals its place in the brute-force order. */
async function expectRanksAgree(app: App, rand: () => number) {
	const order = await bruteForce(app);
	const expected = new Map(order.map((row, i) => [row.userkey, i + 1]));
	for (const userkey of sample(order, rand)) {
		const q = { appid: app.appid, campaignid: app.campaignid, bucket: "all", userkey };
		const rank = expected.get(userkey);
		expect([userkey, (await readStanding(env.DB, q))?.rank]).toEqual([userkey, rank]);
		const bounded = await readStanding(env.DB, { ...q, ahead: 1000 });
		expect([userkey, bounded?.rank]).toEqual([userkey, Math.min(rank ?? 0, 1001)]);
	}
	const last = order[order.length - 1];
	const res = await app.api<{ user: { rank: number } }>("getleaderboard", { limit: 5, userkey: last?.userkey });
	expect(res.body.user.rank).toBe(order.length);
	await expectBoardCountersAgree(app.appid);
}

async function levels(app: App) {
	const { results } = await env.DB.prepare(
		"SELECT friends, referrers, ties FROM leaderboard_levels WHERE appid = ? AND bucket = 'all' ORDER BY friends",
	)
		.bind(app.appid)
		.all<{ friends: number; referrers: number; ties: number }>();
	return results;
}

async function slices(app: App, friends: number): Promise<number> {
	const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM leaderboard_ties WHERE appid = ? AND friends = ?")
		.bind(app.appid, friends)
		.first<{ n: number }>();
	return row?.n ?? 0;
}

async function allSlices(app: App, friends: number) {
	const { results } = await env.DB.prepare(
		"SELECT width, slice, referrers FROM leaderboard_ties WHERE appid = ? AND friends = ? ORDER BY width, slice",
	)
		.bind(app.appid, friends)
		.all();
	expect(results.length).toBeGreaterThan(0);
	return results;
}

/**
 * Counters i in [from, to] of `prefix`, each in ONE statement: `friends` friends, reached at a time spread over
 * some 170 days (a few years back for every fifth), three referrers per second and two per millisecond, so that
 * ties share every prefix of their time down to the instant (told apart by userkey).
 */
function insertCounters(app: App, prefix: string, from: number, to: number, friends: number) {
	return env.DB.prepare(
		`WITH RECURSIVE s(i) AS (SELECT CAST(?4 AS INTEGER) UNION ALL SELECT i + 1 FROM s WHERE i < ?5), k(i, k) AS (SELECT i, (i * 7919) % 1999 FROM s)
		 INSERT INTO leaderboard_counts (appid, campaignid, bucket, userkey, friends, earned, reached_at)
		 SELECT ?1, ?2, 'all', ?3 || printf('%04d', i), ?6, 5,
		   strftime('%Y-%m-%dT%H:%M:%S', '2024-08-20 15:45:00', ((k / 3) * 22000 - (k % 5 = 0) * 60000000) || ' seconds')
		     || '.' || printf('%03d', (i % 2) * 250) || 'Z'
		 FROM k`,
	)
		.bind(app.appid, app.campaignid, prefix, from, to, friends)
		.run();
}

describe("tie slices only where ties are many (issue 33, migration 0035)", () => {
	it("ranks exactly below, across and above the threshold, crossed by an insert and by an update, and as a flagged level shrinks", async () => {
		expect(TIE_SLICES_FROM).toBe(1024);
		const rand = mulberry32(33_035);
		const app = await createOneDatabaseApp({ campaignstartdate: "2020-01-01T00:00:00Z" });
		const prefix = `thr${crypto.randomUUID().slice(0, 6)}-`;
		const n = 1100;
		await env.DB.prepare(
			`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?4)
			 INSERT INTO users (appid, userkey, referralcode, campaignid, name, created_at, updated_at)
			 SELECT ?1, ?2 || printf('%04d', i), upper(?2) || i, ?3, 'Referrer ' || i, '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z' FROM s`,
		)
			.bind(app.appid, prefix, app.campaignid, n)
			.run();

		// One short of the threshold: no slice; ties counted on the index. A few referrers ahead at 3 friends.
		await insertCounters(app, prefix, 1, TIE_SLICES_FROM - 1, 1);
		await insertCounters(app, prefix, 1091, 1100, 3);
		expect(await levels(app)).toEqual([
			{ friends: 1, referrers: TIE_SLICES_FROM - 1, ties: 0 },
			{ friends: 3, referrers: 10, ties: 0 },
		]);
		expect(await slices(app, 1)).toBe(0);
		await expectRanksAgree(app, rand);

		// The statement that brings the level to the threshold counts its slices (the rows before it included) and flags it.
		await insertCounters(app, prefix, TIE_SLICES_FROM, 1090, 1);
		expect(await levels(app)).toEqual([
			{ friends: 1, referrers: 1090, ties: 1 },
			{ friends: 3, referrers: 10, ties: 0 },
		]);
		expect(await slices(app, 1)).toBeGreaterThan(1000);
		await expectRanksAgree(app, rand);

		// An update crossing it (the flush raises a count and its time together): 1,030 referrers to 2 friends in one
		// statement. Level 2 is flagged at its 1,024th; level 1 shrinks to 60 and keeps its slices, exact.
		await env.DB.prepare(
			`UPDATE leaderboard_counts SET friends = 2, reached_at = strftime('%Y-%m-%dT%H:%M:%fZ', reached_at, '+400 days')
			 WHERE appid = ? AND bucket = 'all' AND friends = 1 AND userkey <= ? || '1030'`,
		)
			.bind(app.appid, prefix)
			.run();
		expect(await levels(app)).toEqual([
			{ friends: 1, referrers: 60, ties: 1 },
			{ friends: 2, referrers: 1030, ties: 1 },
			{ friends: 3, referrers: 10, ties: 0 },
		]);
		await expectRanksAgree(app, rand);

		// Reversals (a count falls, its time kept) bring level 2 below the threshold: it stays flagged and exact.
		await env.DB.prepare(
			`UPDATE leaderboard_counts SET friends = 1 WHERE appid = ? AND bucket = 'all' AND friends = 2 AND (CAST(substr(userkey, -4) AS INTEGER) % 7) = 0`,
		)
			.bind(app.appid)
			.run();
		// Erasures (the real path: the admin route deletes the person's counters), among them the first of level 2.
		const order = await bruteForce(app);
		const firstOfTwo = order.find((r) => r.friends === 2)?.userkey ?? "";
		const gone = [firstOfTwo, ...order.filter((_, i) => i % 97 === 5).map((r) => r.userkey)];
		for (const userkey of gone) expect((await admin("DELETE", `/apps/${app.appid}/users/${userkey}`)).status).toBe(200);
		const shrunk = await levels(app);
		expect(shrunk.find((l) => l.friends === 2)?.referrers).toBeLessThan(TIE_SLICES_FROM);
		expect(shrunk.map((l) => [l.friends, l.ties])).toEqual([
			[1, 1],
			[2, 1],
			[3, 0],
		]);
		await expectRanksAgree(app, rand);
		expect(await slices(app, 3)).toBe(0);

		// Migration 0035 on a board counted by 0033 (every level sliced): it flags the levels of 1,024 or more and
		// deletes the other levels' slices. On levels flagged by the triggers that gives what they kept, as long as no
		// flagged level has shrunk below the threshold (a migration cannot know it was flagged): level 1 joins level 2.
		await env.DB.prepare("UPDATE leaderboard_counts SET friends = 2 WHERE appid = ? AND bucket = 'all' AND friends = 1")
			.bind(app.appid)
			.run();
		const flagged = await levels(app);
		expect(flagged.map((l) => [l.friends, l.referrers >= TIE_SLICES_FROM, l.ties])).toEqual([
			[1, false, 1],
			[2, true, 1],
			[3, false, 0],
		]);
		const kept = await allSlices(app, 2);
		const migration = (prefix: string) => env.TEST_MIGRATIONS.find((m) => m.name.startsWith(prefix))?.queries ?? [];
		const recount = migration("0033_").filter((q) => /^\s*INSERT INTO leaderboard_ties\b/.test(q));
		const thresholds = migration("0035_").filter((q) =>
			/^\s*(--.*\n\s*)*(UPDATE leaderboard_levels SET ties = 1 WHERE referrers|DELETE FROM leaderboard_ties WHERE NOT EXISTS)\b/.test(q),
		);
		expect([recount.length, thresholds.length]).toEqual([1, 2]);
		await env.DB.batch(
			["UPDATE leaderboard_levels SET ties = 0", "DELETE FROM leaderboard_ties", ...recount, ...thresholds].map((q) => env.DB.prepare(q)),
		);
		expect((await levels(app)).map((l) => [l.friends, l.ties])).toEqual([
			[1, 0],
			[2, 1],
			[3, 0],
		]);
		expect(await slices(app, 1)).toBe(0);
		expect(await allSlices(app, 2)).toEqual(kept);
		await expectRanksAgree(app, rand);
	});

	it("writes a handful of rows for a counter change on a small level (D1 meta.rows_written)", async () => {
		const app = await createOneDatabaseApp({ campaignstartdate: "2020-01-01T00:00:00Z" });
		const prefix = `few${crypto.randomUUID().slice(0, 6)}-`;
		await insertCounters(app, prefix, 1, 20, 1);
		await insertCounters(app, prefix, 101, 700, 3);
		// A first friend of a new referrer: its counter (the row and its rank index entry; the table keyed by the user since
		// migration 0036, no user index) and its level.
		const created = await insertCounters(app, prefix, 21, 21, 1);
		// A second friend (count and time raised together, as the flush does): the counter, one level down, one up.
		const raised = await env.DB.prepare(
			"UPDATE leaderboard_counts SET friends = 2, reached_at = '2026-01-01T00:00:00.000Z' WHERE appid = ? AND userkey = ?",
		)
			.bind(app.appid, `${prefix}0021`)
			.run();
		// An erasure of it: the counter and its level.
		const erased = await env.DB.prepare("DELETE FROM leaderboard_counts WHERE appid = ? AND userkey = ?")
			.bind(app.appid, `${prefix}0021`)
			.run();
		// Before migration 0035, each also wrote six tie slices (out of the old count and into the new one for a raise)
		// and deleted the emptied ones: 10, 20 and 14 rows (D1's count, measured on the parent commit); before migration
		// 0036 a new counter wrote 4 (leaderboard_counts_user too).
		expect({ created: created.meta.rows_written, raised: raised.meta.rows_written, erased: erased.meta.rows_written }).toEqual({
			created: 3,
			raised: 4,
			erased: 2,
		});
		expect(await slices(app, 1)).toBe(0);
		// And reads a few rows: the count of a level's slices when it reaches the threshold is driven by the level's
		// row, so a write on a level of 600 below it reads none of its counters (a statement that did would read 600).
		const joined = await insertCounters(app, prefix, 701, 701, 3);
		expect(joined.meta.rows_written).toBe(3);
		expect(joined.meta.rows_read).toBeLessThan(30);
		await expectBoardCountersAgree(app.appid);
	});
});
