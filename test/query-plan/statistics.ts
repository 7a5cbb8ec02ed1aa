/**
 * sqlite_stat1 rows that describe a database grown large, so EXPLAIN QUERY
 * PLAN plans as SQLite would once `ANALYZE` or `PRAGMA optimize` has run on
 * a production database (D1 and a Durable Object's SQLite may run either):
 * the documented way to make SQLite plan for data it does not hold
 * (https://www.sqlite.org/optoverview.html, "Manual Control Of Query Plans
 * Using SQLITE_STAT Tables"; the stat format: "The sqlite_stat1 table" in
 * https://www.sqlite.org/fileformat2.html). Without statistics SQLite guesses
 * the same size for every table and a few rows per key of every index, and
 * may then order a join one way where real statistics order it another (a
 * friends page's join scanned a ledger's rewards once statistics were there).
 */

/** Rows of a table that grows with use, as statistics describe it: a large deployment's (or a heavy user's ledger). */
export const LARGE_ROWS = 1_000_000;
/** Rows of a bounded table (a schema version, one profile, the six slice widths): a handful. */
export const SMALL_ROWS = 10;

/** A partial index holds a subset (rows not yet delivered, open cases, prepared transactions): a hundredth. */
const PARTIAL_SHARE = 100;

/**
 * Columns by how many rows share one value in a large database, by name (one
 * name per concept, docs/architecture.md): a tenant's (an app, campaign,
 * rule, leaderboard level: many rows each), a category's (a state, a kind, a
 * unit: a handful of values), an entity's (a user, a person, a friend: some
 * ten rows each); any other column (keys, times, sequence numbers) nearly
 * unique.
 */
const TENANT = new Set(["appid", "live_appid", "campaignid", "ruleid", "bucket", "friends", "width", "shard"]);
const CATEGORY = new Set([
	"kind",
	"state",
	"status",
	"rewardstatus",
	"livemode",
	"eventname",
	"usertype",
	"rewardunit",
	"rewardtype",
	"growthhack",
	"payout_state",
	"target_type",
	"action",
	"grants_pending",
	"type",
	"role",
	"outcome",
]);
const ENTITY = new Set([
	"userkey",
	"userid",
	"personid",
	"memberid",
	"referrer_userid",
	"friend_userkey",
	"customer",
	"paymentcustomerid",
	"couponid",
	"actor",
]);

/** Rows per value of an index's key prefix ending at `column`, given `rows` per value of the prefix before it. */
function narrowed(rows: number, column: string, tenantsBefore: number): number {
	if (TENANT.has(column)) return rows / (tenantsBefore === 0 ? 1000 : 10);
	if (CATEGORY.has(column)) return rows / 5;
	if (ENTITY.has(column)) return Math.min(rows, 10);
	return 1;
}

export interface StatRow {
	tbl: string;
	idx: string | null;
	stat: string;
}

/** What statsFor needs to know of one index: its name, whether UNIQUE (or a primary key), whether partial, and its key columns. */
export interface IndexShape {
	name: string;
	unique: boolean;
	partial: boolean;
	columns: string[];
}

/**
 * The sqlite_stat1 rows of one table: its row count (large when it grows,
 * small when bounded) and, per index, the rows per distinct value of each
 * prefix of its key (narrowed column by column, by the column's kind), 1
 * for the whole key of a unique index.
 */
export function statsFor(tbl: string, growing: boolean, indexes: readonly IndexShape[]): StatRow[] {
	const rows = growing ? LARGE_ROWS : SMALL_ROWS;
	const out: StatRow[] = [{ tbl, idx: null, stat: String(rows) }];
	for (const index of indexes) {
		const n = index.partial ? Math.max(1, Math.round(rows / PARTIAL_SHARE)) : rows;
		let per = n;
		let tenants = 0;
		const perPrefix = index.columns.map((column, i) => {
			per = Math.max(1, narrowed(per, column, tenants));
			if (TENANT.has(column)) tenants++;
			return index.unique && i === index.columns.length - 1 ? 1 : Math.round(per);
		});
		out.push({ tbl, idx: index.name, stat: [n, ...perPrefix].join(" ") });
	}
	return out;
}

/** One database's SQL, D1's (async) or a Durable Object's SqlStorage (sync) alike. */
export type Query = (sql: string, ...args: SqlStorageValue[]) => Promise<Record<string, unknown>[]>;

/**
 * The tables of a database, its own (SQLite's and the runtime's `_cf_` aside),
 * with the shape of each index (one statement per table and per index, sent
 * together: D1 refuses a pragma function whose argument is another table's
 * column, and a long compound SELECT).
 */
async function shapes(query: Query): Promise<Map<string, IndexShape[]>> {
	const tables = (
		await query(
			"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
		)
	).map((r) => String(r.name));
	const lists = await Promise.all(tables.map((t) => query('SELECT name, "unique" AS u, partial FROM pragma_index_list(?)', t)));
	const out = new Map<string, IndexShape[]>();
	await Promise.all(
		tables.map(async (table, i) => {
			const indexes = await Promise.all(
				(lists[i] ?? []).map(async (l) => {
					const columns = await query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", String(l.name));
					return { name: String(l.name), unique: l.u === 1, partial: l.partial === 1, columns: columns.map((c) => String(c.name ?? "")) };
				}),
			);
			out.set(table, indexes);
		}),
	);
	return out;
}

/** Writes `rows` as the database's statistics, in one statement, and has the planner read them again. */
async function writeStats(query: Query, rows: readonly StatRow[]): Promise<void> {
	await query("DELETE FROM sqlite_stat1");
	await query(
		"INSERT INTO sqlite_stat1 (tbl, idx, stat) SELECT value ->> 'tbl', value ->> 'idx', value ->> 'stat' FROM json_each(?)",
		JSON.stringify(rows),
	);
	// Reads sqlite_stat1 again (https://www.sqlite.org/lang_analyze.html): no table is analyzed.
	await query("ANALYZE sqlite_schema");
}

/**
 * Replaces the database's statistics with ones describing it grown large
 * (`growing` names the tables that grow; any other table is bounded) and has
 * the planner read them. Returns a function that puts the statistics back as
 * they were (none, on a database no one analyzed).
 */
export async function pretendLarge(query: Query, growing: readonly string[]): Promise<() => Promise<void>> {
	// Makes sqlite_stat1 exist (it cannot be created by name) without analyzing any table.
	await query("ANALYZE sqlite_schema");
	const before = (await query("SELECT tbl, idx, stat FROM sqlite_stat1")).map((r) => ({
		tbl: String(r.tbl),
		idx: r.idx === null ? null : String(r.idx),
		stat: String(r.stat),
	}));
	const grows = new Set(growing);
	const stats = [...(await shapes(query))].flatMap(([table, indexes]) => statsFor(table, grows.has(table), indexes));
	await writeStats(query, stats);
	return () => writeStats(query, before);
}
