import { describe, expect, it } from "vitest";
import {
	afterCursor,
	compareKeys,
	compareValues,
	decodeShardCursor,
	encodeShardCursor,
	mergePage,
	mergeTop,
	rankFromAhead,
	type ShardPosition,
	type SortKey,
	sumCounters,
} from "../../src/domain/shard-merge";

// Issue 50: the pure merge of what every shard answered (docs/scaling.md "Admin views across shards").

type Row = { t: string; id: number };
const keyOf = (r: Row): SortKey => [r.t, r.id];

/** Each shard's rows after `cursor` in the list's order, at most `take` (what a shard's indexed statement answers). */
function shardAnswer(rows: Row[], shard: number, cursor: ShardPosition | null, direction: "asc" | "desc", take: number): Row[] {
	const after = afterCursor(cursor, shard, direction);
	const sign = direction === "asc" ? 1 : -1;
	return rows
		.filter((r) => {
			if (!after) return true;
			const c = sign * compareKeys(keyOf(r), after.key);
			return c > 0 || (after.inclusive && c === 0);
		})
		.sort((a, b) => sign * compareKeys(keyOf(a), keyOf(b)))
		.slice(0, take);
}

/** Pages through `shards` with `limit`, as pageAcrossShards does; every row with its shard, in page order. */
function pageAll(shards: Row[][], limit: number, direction: "asc" | "desc"): string[] {
	const seen: string[] = [];
	let cursor: ShardPosition | null = null;
	for (let pages = 0; pages < 1000; pages++) {
		const perShard = shards.map((rows, shard) => shardAnswer(rows, shard, cursor, direction, limit + 1));
		const page = mergePage(perShard, limit, keyOf, direction);
		expect(page.rows.length).toBeLessThanOrEqual(limit);
		seen.push(...page.rows.map(({ row, shard }) => `${row.t}/${row.id}@${shard}`));
		if (!page.next) return seen;
		// Through the opaque cursor, as a client would send it back.
		cursor = decodeShardCursor(encodeShardCursor(page.next), ["text", "integer"], shards.length);
		expect(cursor).toEqual(page.next);
	}
	throw new Error("did not end");
}

describe("keyset pages across shards", () => {
	// Equal keys in several shards (the shard breaks the tie), and text whose UTF-16 order differs from SQLite's.
	const texts = ["a", "b", "é", "\uff01", "😀", "a😀", "a\uff01"];
	const shards: Row[][] = [0, 1, 2, 3].map((shard) =>
		Array.from({ length: 9 + shard * 3 }, (_, i) => ({ t: texts[(i * 5 + shard) % texts.length] ?? "a", id: i % 4 })).filter(
			(r, i, all) => all.findIndex((o) => o.t === r.t && o.id === r.id) === i,
		),
	);
	const everyRow = shards.flatMap((rows, shard) => rows.map((r) => ({ ...r, shard })));

	for (const direction of ["asc", "desc"] as const) {
		it(`gives every row once, in (key, shard) ${direction} order, for every page size`, () => {
			const sign = direction === "asc" ? 1 : -1;
			const expected = [...everyRow]
				.sort((a, b) => sign * (compareKeys(keyOf(a), keyOf(b)) || a.shard - b.shard))
				.map((r) => `${r.t}/${r.id}@${r.shard}`);
			expect(new Set(expected).size).toBe(everyRow.length);
			for (const limit of [1, 2, 3, 5, 8, 13, 100]) expect(pageAll(shards, limit, direction), `limit ${limit}`).toEqual(expected);
		});
	}

	it("asks the cursor's shard and those before it strictly after the key, the later ones from the key on", () => {
		const cursor = { key: ["x", 1], shard: 2 };
		expect([0, 1, 2, 3].map((s) => afterCursor(cursor, s, "asc")?.inclusive)).toEqual([false, false, false, true]);
		expect([0, 1, 2, 3].map((s) => afterCursor(cursor, s, "desc")?.inclusive)).toEqual([true, true, false, false]);
		expect(afterCursor(null, 0, "asc")).toBeNull();
	});

	it("ends with no cursor when the shards hold exactly a page", () => {
		const page = mergePage([[{ t: "a", id: 1 }], [{ t: "b", id: 1 }]], 2, keyOf, "asc");
		expect(page.rows.map((r) => r.shard)).toEqual([0, 1]);
		expect(page.next).toBeNull();
	});
});

describe("SQLite's order of key values", () => {
	it("puts numbers before text and orders text by code point, as BINARY collation of UTF-8 does", () => {
		expect(compareValues(99, "0")).toBeLessThan(0);
		expect(compareValues(2, 10)).toBeLessThan(0);
		// U+FF01 is after U+D83D (a surrogate) in UTF-16, before U+1F600 in code points and in UTF-8.
		expect("\uff01" > "😀").toBe(true);
		expect(compareValues("\uff01", "😀")).toBeLessThan(0);
		expect(compareValues("a", "ab")).toBeLessThan(0);
		expect(compareValues("é", "é")).toBe(0);
		expect(compareKeys(["a", 2], ["a", 10])).toBeLessThan(0);
	});
});

describe("the opaque cursor", () => {
	it("round-trips any text key, and refuses what it could not have made", () => {
		const position = { key: ["2026-11-29T10:00:00.000Z", "日本 😀", 42], shard: 3 };
		const shape = ["text", "text", "integer"] as const;
		expect(decodeShardCursor(encodeShardCursor(position), shape, 4)).toEqual(position);
		expect(encodeShardCursor(position)).toMatch(/^[A-Za-z0-9_-]+$/);
		for (const bad of [
			"",
			"not base64!",
			btoa("{"),
			encodeShardCursor({ key: ["a", "b", 1], shard: 4 }), // no shard 4 of 4
			encodeShardCursor({ key: ["a", "b", 1.5], shard: 0 }),
			encodeShardCursor({ key: ["a", 1, 1], shard: 0 }),
			encodeShardCursor({ key: ["a", "b"], shard: 0 }),
			btoa(JSON.stringify(["a", "b", 2 ** 60, 0])),
			"A".repeat(3000),
		])
			expect(decodeShardCursor(bad, shape, 4), bad).toBeNull();
	});
});

describe("boards, ranks and counters over shards", () => {
	type Entry = { userkey: string; friends: number; reachedAt: string };
	const board = (a: Entry, b: Entry) => b.friends - a.friends || compareValues(a.reachedAt, b.reachedAt);

	it("merges each shard's top N into the top N, a full tie ordered by shard", () => {
		const perShard: Entry[][] = [
			[
				{ userkey: "a", friends: 9, reachedAt: "t2" },
				{ userkey: "b", friends: 5, reachedAt: "t1" },
			],
			[
				{ userkey: "c", friends: 9, reachedAt: "t1" },
				{ userkey: "d", friends: 9, reachedAt: "t2" },
			],
			[],
			[{ userkey: "e", friends: 7, reachedAt: "t0" }],
		];
		expect(mergeTop(perShard, 3, board).map((e) => e.userkey)).toEqual(["c", "a", "d"]);
		expect(mergeTop(perShard, 10, board).map((e) => e.userkey)).toEqual(["c", "a", "d", "e", "b"]);
	});

	it("ranks a user 1 + the rows ahead of it in every shard", () => {
		expect(rankFromAhead([0, 0, 0, 0])).toBe(1);
		expect(rankFromAhead([3, 0, 12, 1])).toBe(17);
	});

	it("sums counter rows by key over shards, keeping the other fields", () => {
		type Slot = { day: string; label: string; signups: number; conversions: number };
		const summed = sumCounters<Slot>(
			[
				[
					{ day: "d1", label: "x", signups: 1, conversions: 0 },
					{ day: "d2", label: "x", signups: 2, conversions: 1 },
				],
				[{ day: "d2", label: "y", signups: 5, conversions: 3 }],
				[{ day: "d3", label: "z", signups: 1, conversions: 1 }],
			],
			(s) => s.day,
			["signups", "conversions"],
		);
		expect(summed).toEqual([
			{ day: "d1", label: "x", signups: 1, conversions: 0 },
			{ day: "d2", label: "x", signups: 7, conversions: 4 },
			{ day: "d3", label: "z", signups: 1, conversions: 1 },
		]);
	});
});
