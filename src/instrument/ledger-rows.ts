import { countLedgerRows, metricsEnabled } from "./d1-metrics";
import { countPart } from "./platform-parts";

/**
 * The bench's count of the rows a ledger writes to its own SQLite
 * (src/instrument/d1-metrics.ts, only with `D1_QUERY_COUNT` set): the
 * ledgers' side of what a write costs, beside D1's `rows_written`. Storage
 * whose `sql.exec` cursors report their `rowsWritten`, read once the
 * synchronous transaction that ran them is over (a cursor that is never
 * iterated has run its statement already: exec runs it). It also counts the
 * ledgers' statements, synchronous transactions and alarm writes
 * (platform-parts.ts).
 */
export function countingStorage(storage: DurableObjectStorage, env: Env): DurableObjectStorage {
	if (!metricsEnabled(env)) return storage;
	// The statements of one synchronous stretch are read together, in one microtask after it (not one
	// microtask each: 30-odd per conversion, 1% of its profile, with the flag on for the whole bench run).
	const ran: { cursor: SqlStorageCursor<Record<string, SqlStorageValue>>; query: string }[] = [];
	const countRan = () => {
		for (const { cursor, query } of ran.splice(0)) countLedgerRows(cursor.rowsWritten, query);
	};
	const counted = new Proxy(Reflect.get(storage, "sql") as SqlStorage, {
		get(target, prop) {
			if (prop === "exec") {
				return (query: string, ...bindings: unknown[]) => {
					countPart("ledgerStatements");
					const cursor = target.exec(query, ...bindings);
					if (ran.push({ cursor, query }) === 1) queueMicrotask(countRan);
					return cursor;
				};
			}
			const value = Reflect.get(target, prop);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return new Proxy(storage, {
		get(target, prop) {
			if (prop === "sql") return counted;
			if (prop === "transactionSync") {
				return <T>(fn: () => T): T => {
					countPart("ledgerTransactions");
					return target.transactionSync(fn);
				};
			}
			if (prop === "setAlarm" || prop === "deleteAlarm") {
				return (...args: unknown[]) => {
					countPart("ledgerAlarms");
					return Reflect.apply(Reflect.get(target, prop), target, args);
				};
			}
			const value = Reflect.get(target, prop);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}
