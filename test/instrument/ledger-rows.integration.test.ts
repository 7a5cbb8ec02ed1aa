import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { d1Totals, sqlKey } from "../../src/instrument/d1-metrics";
import { countingStorage } from "../../src/instrument/ledger-rows";
import { platformParts } from "../../src/instrument/platform-parts";
import { freshLedger } from "../ledger/support";

/**
 * The bench's count of the rows a ledger writes to its own SQLite
 * (src/instrument/ledger-rows.ts): every statement's `rowsWritten`, read
 * once the synchronous stretch that ran it is over, whether its cursor was
 * read or not, into the total and the breakdown by statement. A real
 * object's storage, wrapped as UserLedger wraps it with the flag on.
 */
describe("ledger rows counted", () => {
	it("counts every statement of each synchronous stretch once, cursors read or not", async () => {
		const { stub } = freshLedger();
		// Defined on a child of the test env: an assignment would go through to the runner's env and flag the rest of the file.
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1" } });
		const insert = "INSERT INTO rows_counted_t (x) VALUES (?)";
		const update = "UPDATE rows_counted_t SET x = x + 1 WHERE x > ?";
		const result = await runInDurableObject(stub, async (_ledger, state) => {
			const sql = countingStorage(state.storage, flagged).sql;
			const before = { rows: d1Totals().ledgerStorage.rowswritten, statements: platformParts().ledgerStatements };
			// Cursors never read: exec ran their statements.
			const table = sql.exec("CREATE TABLE rows_counted_t (x INTEGER)");
			const inserts = [1, 2, 3].map((x) => sql.exec(insert, x));
			const updated = sql.exec(update, 1).rowsWritten;
			await new Promise((resolve) => setTimeout(resolve, 0));
			const first = d1Totals().ledgerStorage.rowswritten - before.rows;
			// A second stretch, after the first was counted.
			sql.exec(insert, 4);
			await new Promise((resolve) => setTimeout(resolve, 0));
			return {
				table: table.rowsWritten,
				inserted: inserts.reduce((n, c) => n + c.rowsWritten, 0),
				updated,
				first,
				second: d1Totals().ledgerStorage.rowswritten - before.rows - first,
				statements: platformParts().ledgerStatements - before.statements,
			};
		});
		expect(result.inserted).toBe(3);
		expect(result.updated).toBe(2);
		expect(result.first).toBe(result.table + 3 + 2);
		expect(result.second).toBe(1);
		expect(result.statements).toBe(6);
		const bySql = d1Totals().rowsBySql;
		expect(bySql[sqlKey("ledgers", insert)]?.rows).toBeGreaterThanOrEqual(4);
		expect(bySql[sqlKey("ledgers", update)]?.rows).toBeGreaterThanOrEqual(2);
	});

	it("counts the alarm's writes (set and delete) with the flag, and none without it", async () => {
		const { stub } = freshLedger();
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1" } });
		const counts = await runInDurableObject(stub, async (_ledger, state) => {
			const alarms = () => platformParts().ledgerAlarms;
			const start = alarms();
			const storage = countingStorage(state.storage, flagged);
			await storage.setAlarm(Date.now() + 60_000);
			await storage.deleteAlarm();
			const counted = alarms() - start;
			const plain = countingStorage(state.storage, env);
			await plain.setAlarm(Date.now() + 60_000);
			await plain.deleteAlarm();
			return { counted, uncounted: alarms() - start - counted, stored: await state.storage.getAlarm() };
		});
		expect(counts).toEqual({ counted: 2, uncounted: 0, stored: null });
	});
});
