import { LEDGER_SCHEMA } from "./schema-latest";
import type { LedgerStatement } from "./schema-step-12";

/** The schema at the newest version as one script (schema-latest.ts), for objects that have no tables yet. */
export interface LatestSchema {
	version: number;
	script: string;
}

/**
 * Brings a ledger's SQLite schema to the newest version of `migrations`.
 * A new object (no tables at all) gets the newest schema in one `exec` of
 * `latest.script`, in one transaction, when that script is at the newest
 * version. Any other object goes one step at a time, each step and its
 * version bump in one transaction, so a crash leaves the object at a whole
 * version. The version lives in `meta` (key `schema_version`); an object from
 * before versioning has tables but no version and counts as 0.
 */
export function migrateLedger(
	storage: DurableObjectStorage,
	migrations: readonly (readonly LedgerStatement[])[],
	latest: LatestSchema = LEDGER_SCHEMA,
): number {
	const sql = storage.sql;
	const tables = sql
		.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'rewards')")
		.toArray()
		.map((t) => t.name);
	if (tables.length === 0 && latest.version === migrations.length) {
		storage.transactionSync(() => sql.exec(latest.script));
		return latest.version;
	}
	if (!tables.includes("meta")) sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
	const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").toArray()[0];
	let version = row ? Number(row.value) : 0;
	if (version > migrations.length) throw new Error(`ledger schema version ${version} is newer than this code (${migrations.length})`);
	while (version < migrations.length) {
		const steps = migrations[version] ?? [];
		const next = version + 1;
		storage.transactionSync(() => {
			runStep(sql, steps);
			sql.exec(
				"INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
				String(next),
			);
		});
		version = next;
	}
	return version;
}

/** Runs one step's statements in order (a function statement gets the SQL: schema-step-12.ts), in the caller's transaction. */
export function runStep(sql: SqlStorage, step: readonly LedgerStatement[]): void {
	for (const statement of step) {
		if (typeof statement === "string") sql.exec(statement);
		else statement(sql);
	}
}
