import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { leaderboardCounters, readStanding } from "../../src/db/leaderboard";
import { TIE_SLICES_FROM } from "../../src/db/leaderboard-ties";
import { projectionStatement } from "../../src/db/projection";
import { type ProjectedRow, type ProjectionMessage, writeProjectionBatch } from "../../src/db/projection-batch";
import { bucketsOf } from "../../src/domain/leaderboard";
import { mulberry32 } from "../ledger/support";
import { createApp } from "../support/api";
import { expectBoardCountersAgree } from "../support/board-counters";
import { projectedRow } from "../support/projection";

/**
 * Issue 33, rows written: the projection batch sums the leaderboard counter
 * changes of a referrer's rewards per counter (db/leaderboard-batch.ts)
 * instead of moving the counter once per reward. The result must be exactly
 * that of applying the same rewards one by one (each reward's counter
 * statements, then its projection upsert: what the flush did before): the
 * counters (friends, earned, reached_at), the levels and their tie flags,
 * the tie slices and every rank. A seeded random history (fixed seed) of a
 * hot referrer and a few others: new rewards, rejections, partial and full
 * reversals, replays of older versions, a reward twice in one batch, two
 * rewards for the same friend, an erased referrer; on a board whose level of
 * 1 friend is above the tie threshold (slices) and whose level of 2 is below.
 */

const SEED = 33_0036;
const ZONE = "UTC";
const REFERRERS = 8;
/** The last referrer is erased before any of its rewards reach D1. */
const ERASED = REFERRERS - 1;

interface Reward {
	referrer: number;
	row: ProjectedRow;
}

/** One app's copy of the history: its userkeys start with its own prefix, of the same length, so they sort alike. */
interface Side {
	appid: string;
	campaignid: number;
	prefix: string;
}

const referrerKey = (side: Side, i: number) => `${side.prefix}r${String(i).padStart(2, "0")}`;

const reward = (seq: number, friend: string, createdAt: string, amount: number, campaignid: number): ProjectedRow =>
	projectedRow(seq, { campaignid, amount, friend_userkey: friend, created_at: createdAt, updated_at: createdAt });

/** What a ledger sends of one reward at one version: its fields over `reward`'s defaults. */
type Version = Partial<ProjectedRow> & { created_at: string; amount: number; version: number };

/** One reward at one version in a batch; `referrer`, `friend` and `campaign` are indexes, mapped to each app's keys later. */
interface Sent {
	referrer: number;
	seq: number;
	friend: number;
	campaign: number;
	row: Version;
}

/**
 * The history: batches of rewards as the ledgers send them, in order. Friends are `f<n>`; campaign 0 is the
 * app's, 1 another one.
 */
function history(): Sent[][] {
	const rand = mulberry32(SEED);
	const pick = (n: number) => Math.floor(rand() * n);
	const seqs = new Array<number>(REFERRERS).fill(0);
	const rewards: (Omit<Sent, "row"> & { versions: Version[] })[] = [];
	const start = Date.parse("2026-10-26T00:00:00.000Z");
	const batches: Sent[][] = [];
	let friends = 0;
	for (let b = 0; b < 7; b++) {
		const batch: Sent[] = [];
		const send = (r: Omit<Sent, "row"> & { versions: Version[] }, row: Version) => batch.push({ ...r, row });
		for (let k = 0; k < 28; k++) {
			const referrer = rand() < 0.45 ? 0 : 1 + pick(REFERRERS - 1); // referrer 0 is the hot one
			// Every other batch the hot referrer only gains new friends (its counters summed); else anything goes (some of
			// its batches then fall back to one reward at a time: a reward twice, a friend twice).
			const clean = referrer === 0 && b % 2 === 0;
			const existing = clean ? [] : rewards.filter((r) => r.referrer === referrer);
			const kind = rand();
			const r = existing[pick(existing.length)];
			const last = r?.versions[r.versions.length - 1];
			if (r && last && kind < 0.3) {
				// A change of an existing reward: rejected, refunded in part or in full; or a version already sent, again.
				const change = rand();
				if (change >= 0.7) {
					send(r, r.versions[pick(r.versions.length)] ?? last);
					continue;
				}
				const next: Version =
					change < 0.25
						? { ...last, version: last.version + 1, status: "Rejected" }
						: { ...last, version: last.version + 1, reversed: change < 0.5 ? Math.floor(last.amount / 2) : last.amount };
				r.versions.push(next);
				send(r, next);
				if (rand() < 0.3) {
					// The same reward twice in one batch, at two versions.
					const again: Version = { ...next, version: next.version + 1, amount: next.amount + 100, status: "Approved" };
					r.versions.push(again);
					send(r, again);
				}
				continue;
			}
			// A new reward: mostly for a new friend; now and then a second one for a friend the referrer already has.
			const same = r && kind < 0.42 ? r : undefined;
			const seq = (seqs[referrer] ?? 0) + 1;
			seqs[referrer] = seq;
			// Times over five weeks (two months, several weeks), some on a whole second as others.
			const created = new Date(start + pick(35 * 24 * 60) * 60_000 + (rand() < 0.2 ? 0 : pick(1000))).toISOString();
			const row: Version = { created_at: created, amount: 100 + pick(900), version: 1 };
			const fresh = {
				referrer,
				seq,
				friend: same ? same.friend : friends++,
				campaign: same ? same.campaign : rand() < 0.15 ? 1 : 0,
				versions: [row],
			};
			rewards.push(fresh);
			send(fresh, row);
		}
		batches.push(batch);
	}
	// Last, a batch of replays: the first version of every reward that changed since (an older message delivered late).
	batches.push(rewards.filter((r) => r.versions.length > 1).map((r) => ({ ...r, row: r.versions[0] as Version })));
	return batches;
}

function rowsOf(side: Side, batch: Sent[]): Reward[] {
	return batch.map(({ referrer, seq, friend, campaign, row: change }) => ({
		referrer,
		row: { ...reward(seq, `${side.prefix}f${friend}`, change.created_at, change.amount, side.campaignid + campaign), ...change },
	}));
}

/** `levels`: other referrers of the all-time board, [first, last, friends], beside the default ones. */
async function seedSide(levels: (readonly [number, number, number])[] = []): Promise<Side> {
	const app = await createApp({ campaignstartdate: "2020-01-01T00:00:00Z" });
	const side = { appid: app.appid, campaignid: app.campaignid, prefix: `lb${crypto.randomUUID().slice(0, 6)}-` };
	await env.DB.batch(
		Array.from({ length: REFERRERS }, (_, i) =>
			env.DB.prepare(
				"INSERT INTO users (appid, userkey, referralcode, campaignid, name, created_at, updated_at, erased_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			).bind(
				side.appid,
				referrerKey(side, i),
				`${side.prefix}R${i}`.toUpperCase(),
				side.campaignid,
				`Referrer ${i}`,
				"2026-01-01T00:00:00Z",
				"2026-01-01T00:00:00Z",
				i === ERASED ? "2026-01-02T00:00:00Z" : null,
			),
		),
	);
	// Other referrers of the all-time board: 1,030 at 1 friend (above the threshold: tie slices), 40 at 2 (below).
	for (const [from, to, friends] of [[1, TIE_SLICES_FROM + 6, 1] as const, [2001, 2040, 2] as const, ...levels]) {
		await env.DB.prepare(
			`WITH RECURSIVE s(i) AS (SELECT CAST(?4 AS INTEGER) UNION ALL SELECT i + 1 FROM s WHERE i < ?5)
			 INSERT INTO leaderboard_counts (appid, campaignid, bucket, userkey, friends, earned, reached_at)
			 SELECT ?1, ?2, 'all', ?3 || 'x' || printf('%04d', i), ?6, 5,
			   strftime('%Y-%m-%dT%H:%M:%S', '2026-10-26 00:00:00', (((i * 7919) % 50000) * 60) || ' seconds') || '.000Z' FROM s`,
		)
			.bind(side.appid, side.campaignid, side.prefix, from, to, friends)
			.run();
	}
	return side;
}

/** One by one, as the flush wrote before issue 33's sums: each reward's counter statements, then its projection upsert. */
async function oneByOne(side: Side, batches: Sent[][]): Promise<number> {
	let rows = 0;
	for (const batch of batches)
		for (const { referrer, row } of rowsOf(side, batch)) {
			const userkey = referrerKey(side, referrer);
			const counters = leaderboardCounters(env.DB, side.appid, userkey, ZONE, row);
			const results = await env.DB.batch([...counters, projectionStatement(env.DB, side.appid, userkey, row)]);
			rows += results.slice(0, counters.length).reduce((n, r) => n + r.meta.rows_written, 0);
		}
	return rows;
}

/** The same batches through the projection queue's batch: one message per referrer ledger (rewards in their order). */
async function batched(side: Side, batches: Sent[][]): Promise<{ rows: number; summed: number }> {
	const proto = Object.getPrototypeOf(env.DB) as { batch: D1Database["batch"] };
	const batch = proto.batch;
	let rows = 0;
	let summed = 0;
	proto.batch = async function (this: D1Database, statements: D1PreparedStatement[]) {
		const results = await batch.call(this, statements);
		statements.forEach((s, i) => {
			const sql = String(Reflect.get(s, "statement") ?? "");
			if (/(INSERT INTO|UPDATE) leaderboard_counts\b/.test(sql)) rows += results[i]?.meta.rows_written ?? 0;
			if (/json_each\(r\.value -> 9\)/.test(sql)) summed += 1;
		});
		return results;
	} as D1Database["batch"];
	try {
		for (const list of batches) {
			const messages: ProjectionMessage[] = [];
			for (const { referrer, row } of rowsOf(side, list)) {
				const userkey = referrerKey(side, referrer);
				const last = messages[messages.length - 1];
				// Consecutive rewards of a ledger travel in one message; a ledger may send two messages in one batch.
				const m =
					last?.userkey === userkey
						? last
						: { projection: 1 as const, appid: side.appid, userkey, sentAt: Date.now(), rewards: [], webhooks: [], audits: [] };
				if (m !== last) messages.push(m);
				m.rewards.push({ id: row.seq, ref: `projection:${row.seq}`, row });
			}
			await writeProjectionBatch(env.DB, messages, new Map([[side.appid, ZONE]]), new Date().toISOString());
		}
	} finally {
		proto.batch = batch;
	}
	return { rows, summed };
}

/** Everything the leaderboard keeps for an app, with its own prefix taken out of the userkeys. */
async function state(side: Side) {
	const read = async <T extends { campaignid: number }>(sql: string) => (await env.DB.prepare(sql).bind(side.appid).all<T>()).results;
	const counters = (
		await read<{ campaignid: number; bucket: string; userkey: string; friends: number; earned: number; reached_at: string }>(
			"SELECT campaignid, bucket, userkey, friends, earned, reached_at FROM leaderboard_counts WHERE appid = ? ORDER BY campaignid, bucket, userkey",
		)
	).map((c) => ({
		...c,
		campaignid: Number(c.campaignid) - side.campaignid,
		userkey: String(c.userkey).slice(side.prefix.length),
		// Sums of hundredths as REAL: compared to the hundredth (the order of additions may move the last bits).
		earned: Math.round(Number(c.earned) * 100),
	}));
	const levels = (
		await read<{ campaignid: number; bucket: string; friends: number; referrers: number; ties: number }>(
			"SELECT campaignid, bucket, friends, referrers, ties FROM leaderboard_levels WHERE appid = ? AND referrers <> 0 ORDER BY campaignid, bucket, friends",
		)
	).map((l) => ({ ...l, campaignid: Number(l.campaignid) - side.campaignid }));
	const ties = (
		await read(
			"SELECT campaignid, bucket, friends, width, slice, referrers FROM leaderboard_ties WHERE appid = ? ORDER BY campaignid, bucket, friends, width, slice",
		)
	).map((t) => ({ ...t, campaignid: Number(t.campaignid) - side.campaignid }));
	const ranks: unknown[] = [];
	const buckets = new Set(counters.map((c) => `${c.campaignid} ${c.bucket}`));
	for (const b of [...buckets].sort()) {
		const [campaign, bucket] = b.split(" ");
		for (let i = 0; i < REFERRERS; i++) {
			const q = { appid: side.appid, campaignid: side.campaignid + Number(campaign), bucket: bucket ?? "", userkey: referrerKey(side, i) };
			ranks.push([b, i, (await readStanding(env.DB, q))?.rank ?? null]);
		}
	}
	return { counters, levels, ties, ranks };
}

describe("the projection batch's leaderboard counters, summed per counter", { timeout: 120_000 }, () => {
	it("end exactly where one reward at a time ends (counters, levels, tie slices, ranks), in fewer rows", async () => {
		const batches = history();
		const [alone, together] = [await seedSide(), await seedSide()];
		const aloneRows = await oneByOne(alone, batches);
		const { rows: togetherRows, summed } = await batched(together, batches);
		const [expected, actual] = [await state(alone), await state(together)];
		// The history reaches what it means to: the hot referrer far up the board, an erased referrer with no counter, levels of
		// 1 friend (sliced) and 2 (not), referrers ranked in each bucket, and the sums actually used.
		expect(summed).toBeGreaterThan(0);
		expect(expected.counters.filter((c) => c.userkey === `r${String(ERASED).padStart(2, "0")}`)).toEqual([]);
		expect(expected.counters.some((c) => c.userkey === "r00" && Number(c.friends) > 10)).toBe(true);
		expect(expected.levels.some((l) => l.bucket === "all" && l.friends === 1 && l.ties === 1)).toBe(true);
		expect(expected.ranks.filter((r) => Array.isArray(r) && r[2] !== null).length).toBeGreaterThan(20);
		expect(bucketsOf(ZONE, "2026-11-27T00:00:00.000Z").length).toBe(3);
		expect(actual.counters).toEqual(expected.counters);
		expect(actual.levels).toEqual(expected.levels);
		expect(actual.ties).toEqual(expected.ties);
		expect(actual.ranks).toEqual(expected.ranks);
		await expectBoardCountersAgree(alone.appid);
		await expectBoardCountersAgree(together.appid);
		// Rewards spread over five weeks share few counters in this mix: fewer rows, not many fewer (the hot case below).
		expect(togetherRows).toBeLessThan(aloneRows);
	});

	it("moves a hot referrer's counter once per bucket per batch: 50 new friends in one batch", async () => {
		const created = (i: number) => new Date(Date.parse("2026-11-23T08:00:00.000Z") + i * 1000).toISOString();
		const batches: Sent[][] = [0, 50].map((from) =>
			Array.from({ length: 50 }, (_, i) => ({
				referrer: 0,
				seq: from + i + 1,
				friend: from + i,
				campaign: 0,
				row: { created_at: created(from + i), amount: 250, version: 1 },
			})),
		);
		// 1,023 referrers at 50 friends: the first batch's end brings that level to the tie threshold (its slices counted,
		// its flag set), the second leaves it.
		const level50 = [3001, 3000 + TIE_SLICES_FROM - 1, 50] as const;
		const [alone, together] = [await seedSide([level50]), await seedSide([level50])];
		const aloneRows = await oneByOne(alone, batches);
		const { rows: togetherRows, summed } = await batched(together, batches);
		expect(summed).toBe(4);
		const [expected, actual] = [await state(alone), await state(together)];
		expect(expected.counters.filter((c) => c.userkey === "r00").map((c) => [c.bucket, c.friends, c.reached_at])).toEqual([
			["all", 100, created(99)],
			["month:2026-11", 100, created(99)],
			["week:2026-11-23", 100, created(99)],
		]);
		expect(expected.levels.filter((l) => l.bucket === "all" && l.friends === 50)).toEqual([
			{ campaignid: 0, bucket: "all", friends: 50, referrers: TIE_SLICES_FROM - 1, ties: 1 },
		]);
		expect(actual).toEqual(expected);
		await expectBoardCountersAgree(together.appid);
		// One by one: 4 rows per reward and bucket (the counter, its rank index entry, a level out, a level in), 3 for the
		// first (a new counter), and 14 for the tie slices of the all-time level of 1 friend (flagged), entered and left.
		// Summed: a new counter at 50, then raised to 100, per bucket (the level of 1 never entered: the same end). Both
		// count the slices of the level of 50 once, when it reaches the threshold (1,024 counters, 6 widths).
		const slices = aloneRows - (3 * (3 + 99 * 4) + 14);
		expect(slices).toBeGreaterThan(1000);
		expect(togetherRows).toBe(3 * (3 + 4) + slices);
	});
});
