import { expect } from "vitest";

/** Drops every table of a ledger's SQLite but the platform's own (a test that writes an older step's schema by hand). */
export function dropAll(sql: SqlStorage): void {
	for (const { name } of sql
		.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name <> 'sqlite_sequence'")
		.toArray())
		sql.exec(`DROP TABLE ${name}`);
}

/** The statements `fn` runs on this object's SQLite, with their arguments. */
export function recording<T>(sql: SqlStorage, fn: () => T): { result: T; statements: [string, ...unknown[]][] } {
	const proto = Object.getPrototypeOf(sql) as { exec: (...args: unknown[]) => unknown };
	const original = proto.exec;
	const statements: [string, ...unknown[]][] = [];
	proto.exec = function (this: unknown, query: unknown, ...args: unknown[]) {
		statements.push([String(query), ...args]);
		return original.call(this, query, ...args);
	};
	try {
		return { result: fn(), statements };
	} finally {
		proto.exec = original;
	}
}

/**
 * The plan lines of `statements` that read the whole rewards table (by name or by one of the aliases the ledger's
 * statements give it), explained with the data as it is: a SCAN, or an automatic index, which SQLite builds by
 * reading every row (the query-plan guard counts it as a scan too, test/query-plan/).
 */
export function rewardScans(sql: SqlStorage, statements: [string, ...unknown[]][]): string[] {
	expect(statements.length).toBeGreaterThan(0);
	return statements.flatMap(([query, ...args]) =>
		/^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(query)
			? sql
					.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...(args as SqlStorageValue[]))
					.toArray()
					.map((r) => r.detail)
					.filter((d) => /^(SCAN|SEARCH) (rewards|r|n|c)\b/.test(d) && (d.startsWith("SCAN") || /USING AUTOMATIC/.test(d)))
					.map((d) => `${d}: ${query.replace(/\s+/g, " ").slice(0, 120)}`)
			: [],
	);
}
