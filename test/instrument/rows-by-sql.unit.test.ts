import { describe, expect, it } from "vitest";
import { countRowsBySql, d1Totals, sqlKey } from "../../src/instrument/d1-metrics";

/**
 * The bench's rows written by statement (src/instrument/d1-metrics.ts,
 * bench/README.md "Rows by statement"): each SQL text's entry is found once
 * and kept, so counting a statement does not collapse its spaces again; the
 * breakdown must be what it was when every call computed its key.
 */
const entry = (key: string) => d1Totals().rowsBySql[key] ?? { statements: 0, rows: 0 };

describe("rows written by statement", () => {
	it("adds a text's statements and rows under its key, the same for the same SQL spaced otherwise", () => {
		const sql = "INSERT INTO t_rows_by_sql_a (x)\n\t VALUES (?)";
		const key = sqlKey("ledgers", sql);
		expect(key).toBe("ledgers: INSERT INTO t_rows_by_sql_a (x) VALUES (?)");
		const before = entry(key);
		countRowsBySql("ledgers", sql, 2);
		countRowsBySql("ledgers", sql, 3);
		countRowsBySql("ledgers", "  INSERT INTO t_rows_by_sql_a  (x) VALUES (?) ", 1);
		expect(entry(key)).toEqual({ statements: before.statements + 3, rows: before.rows + 6 });
		// Another source is another entry.
		countRowsBySql("worker", sql, 4);
		expect(entry(sqlKey("worker", sql))).toEqual({ statements: 1, rows: 4 });
		expect(entry(key)).toEqual({ statements: before.statements + 3, rows: before.rows + 6 });
	});

	it("counts texts past the kept ones as exactly", () => {
		const texts = Array.from({ length: 1100 }, (_, i) => `SELECT ${i} FROM t_rows_by_sql_b WHERE x IN (${"?, ".repeat(i % 7)}?)`);
		for (const sql of texts) countRowsBySql("scheduled", sql, 1);
		for (const sql of texts) countRowsBySql("scheduled", sql, 2);
		for (const sql of texts) expect(entry(sqlKey("scheduled", sql))).toEqual({ statements: 2, rows: 3 });
	});

	it("cuts a long text's key at 120 characters of SQL", () => {
		const sql = `SELECT ${"a, ".repeat(100)}b FROM t_rows_by_sql_c`;
		expect(sqlKey("consumer", sql)).toBe(`consumer: ${sql.slice(0, 120)}`);
		countRowsBySql("consumer", sql, 5);
		countRowsBySql("consumer", `${sql} WHERE 1`, 5);
		expect(entry(sqlKey("consumer", sql))).toEqual({ statements: 2, rows: 10 });
	});
});
