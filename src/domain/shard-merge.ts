/**
 * Merging what every shard answered into one answer (issue 50, docs/scaling.md
 * "Admin views across shards"). Pure: src/db/fanout.ts asks the shards and
 * hands their rows here.
 *
 * A list pages by keyset over a total order that holds in every shard: the
 * rows' ordering key (e.g. (created_at, userid)), then the shard number as the
 * tie-break, both in the list's direction. The cursor is the last row's
 * position in that order (its key and its shard): one position, valid for
 * every shard, so no per-shard state travels, and a page is the rows one
 * database would answer. Each shard answers its first `limit + 1` rows after
 * the cursor (`afterCursor` says which: strictly after the key in the
 * cursor's shard and the shards before it in the order, from the key on in
 * the shards after it); the merge takes the first `limit`.
 *
 * Ordering keys compare as SQLite compares the columns (numbers before text,
 * text by BINARY collation, i.e. by UTF-8 bytes, which is code point order),
 * so the merge agrees with each shard's `ORDER BY`.
 */

/** One column of an ordering key: an INTEGER or a TEXT column (never NULL: a key column is NOT NULL). */
export type SortValue = string | number;
export type SortKey = readonly SortValue[];
export type Direction = "asc" | "desc";

/** A row's place in the merged order: its ordering key and the shard it came from. */
export interface ShardPosition {
	key: SortKey;
	shard: number;
}

/** What one shard is asked for after a cursor: rows whose key is past `key` (or equal, when `inclusive`). */
export interface ShardAfter {
	key: SortKey;
	inclusive: boolean;
}

/** SQLite's order of two key values: numbers before text, numbers by value, text by code point (UTF-8 byte order). */
export function compareValues(a: SortValue, b: SortValue): number {
	if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
	if (typeof a === "number") return -1;
	if (typeof b === "number") return 1;
	// UTF-16 order differs from code point order only where a surrogate meets a unit from U+E000 up: compare code points.
	const n = Math.min(a.length, b.length);
	for (let i = 0; i < n; i++) {
		const x = a.charCodeAt(i);
		const y = b.charCodeAt(i);
		if (x === y) continue;
		const surrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
		// A surrogate is half of a code point above U+FFFF: after every unit that is a whole code point.
		if (surrogate(x) !== surrogate(y)) return surrogate(x) ? 1 : -1;
		return x < y ? -1 : 1;
	}
	return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** Two ordering keys, column by column (ascending). */
export function compareKeys(a: SortKey, b: SortKey): number {
	const n = Math.min(a.length, b.length);
	for (let i = 0; i < n; i++) {
		const c = compareValues(a[i] as SortValue, b[i] as SortValue);
		if (c !== 0) return c;
	}
	return a.length - b.length;
}

/** Two positions in the merged order of `direction`: the key, then the shard, both in that direction. */
export function comparePositions(a: ShardPosition, b: ShardPosition, direction: Direction): number {
	const ascending = compareKeys(a.key, b.key) || a.shard - b.shard;
	return direction === "asc" ? ascending : -ascending;
}

/**
 * What shard `shard` is asked for after `cursor` (null: from the start). In
 * the shards the order puts before or at the cursor's, a row with the
 * cursor's key came on an earlier page (or is the cursor's own row): strictly
 * after. In the shards after it, such a row comes next: from the key on.
 */
export function afterCursor(cursor: ShardPosition | null, shard: number, direction: Direction): ShardAfter | null {
	if (!cursor) return null;
	const laterShard = direction === "asc" ? shard > cursor.shard : shard < cursor.shard;
	return { key: cursor.key, inclusive: laterShard };
}

/** A merged page: its rows with their shards, in order, and the position to continue from (null: the last page). */
export interface MergedPage<Row> {
	rows: { row: Row; shard: number }[];
	next: ShardPosition | null;
}

/**
 * Merges each shard's rows (`perShard[n]`: shard n's rows after the cursor,
 * in the list's order, at most `limit + 1` of them) into the first `limit`
 * rows of the whole order, and the position after them when more follow: a
 * shard that had `limit + 1` rows, or rows left over, means the merge holds
 * more than `limit`.
 */
export function mergePage<Row>(
	perShard: readonly (readonly Row[])[],
	limit: number,
	keyOf: (row: Row) => SortKey,
	direction: Direction,
): MergedPage<Row> {
	const all = perShard.flatMap((rows, shard) => rows.map((row) => ({ row, shard, key: keyOf(row) })));
	all.sort((a, b) => comparePositions(a, b, direction));
	const taken = all.slice(0, limit);
	const last = taken.at(-1);
	return {
		rows: taken.map(({ row, shard }) => ({ row, shard })),
		next: all.length > limit && last ? { key: last.key, shard: last.shard } : null,
	};
}

/** The column types of a cursor's key, to check a cursor a client sends back. */
export type KeyShape = readonly ("text" | "integer")[];

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** The opaque cursor of a position: base64url of the UTF-8 JSON of [...key, shard]. */
export function encodeShardCursor(position: ShardPosition): string {
	const bytes = encoder.encode(JSON.stringify([...position.key, position.shard]));
	let binary = "";
	for (const byte of bytes) binary += String.fromCharCode(byte);
	return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The position a cursor stands for, when it is one `encodeShardCursor` could
 * have made for a key of `shape` among `shardCount` shards; null for anything
 * else (the caller answers 400: a cursor is client input).
 */
export function decodeShardCursor(cursor: string, shape: KeyShape, shardCount: number): ShardPosition | null {
	if (!/^[A-Za-z0-9_-]*$/.test(cursor) || cursor.length > 2000) return null;
	let parsed: unknown;
	try {
		const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
		parsed = JSON.parse(decoder.decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
	} catch {
		return null;
	}
	if (!Array.isArray(parsed) || parsed.length !== shape.length + 1) return null;
	const shard = parsed.at(-1);
	if (!Number.isInteger(shard) || shard < 0 || shard >= shardCount) return null;
	const key: SortValue[] = [];
	for (const [i, type] of shape.entries()) {
		const value: unknown = parsed[i];
		if (type === "text" && typeof value === "string") key.push(value);
		// An integer beyond 2^53 would not survive JSON in JavaScript: refused rather than rounded.
		else if (type === "integer" && typeof value === "number" && Number.isSafeInteger(value)) key.push(value);
		else return null;
	}
	return { key, shard };
}

/**
 * The first `n` rows of the union of each shard's first `n` (a board's top
 * N: each shard answers its own top N by its index, and since no row is in two
 * shards the merge is exact). `compare` is the board's order; rows it calls
 * equal are ordered by shard, then as their shard answered them (the sort is
 * stable), so the answer never depends on which shard answered first.
 */
export function mergeTop<Row>(perShard: readonly (readonly Row[])[], n: number, compare: (a: Row, b: Row) => number): Row[] {
	return perShard
		.flatMap((rows, shard) => rows.map((row) => ({ row, shard })))
		.sort((a, b) => compare(a.row, b.row) || a.shard - b.shard)
		.slice(0, n)
		.map(({ row }) => row);
}

/**
 * A user's rank over every shard: 1 + the rows ahead of it in each shard (its
 * own shard counts the rows ahead as today's single-database rank does; every
 * other shard counts the rows that come first in the board's order, with the
 * shard number deciding a full tie, as mergeTop does).
 */
export function rankFromAhead(aheadPerShard: readonly number[]): number {
	return 1 + aheadPerShard.reduce((sum, ahead) => sum + ahead, 0);
}

/** The keys of `Row` whose values are numbers: the counters a sum adds. */
export type CounterKeys<Row> = { [K in keyof Row]: Row[K] extends number ? K : never }[keyof Row];

/**
 * Counter rows summed over shards (stats slots, totals: each shard keeps the
 * partial count of the events about its users): rows of one `keyOf` are
 * merged into one whose `counters` are the sums; the other fields are the
 * first shard's. Order: each key where it first appears, shard by shard.
 */
export function sumCounters<Row extends object>(
	perShard: readonly (readonly Row[])[],
	keyOf: (row: Row) => string,
	counters: readonly CounterKeys<Row>[],
): Row[] {
	const merged = new Map<string, Row>();
	for (const rows of perShard) {
		for (const row of rows) {
			const key = keyOf(row);
			const seen = merged.get(key);
			if (!seen) {
				merged.set(key, { ...row });
				continue;
			}
			for (const counter of counters) {
				const sum = Number(seen[counter]) + Number(row[counter]);
				Object.assign(seen, { [counter]: sum });
			}
		}
	}
	return [...merged.values()];
}
