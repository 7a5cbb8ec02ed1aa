/**
 * Ledger schema step 11 (issue 33, rows written per conversion): the outbox
 * keyed by its ref alone, `WITHOUT ROWID`, so an entry writes one row
 * instead of two (its row and its ref's UNIQUE index). Every change already
 * found its entry by ref (the upserts' ON CONFLICT (ref)) or by (id, ref),
 * now read by the ref; the id of a new entry is one more than the largest
 * present (outbox-entries.ts, NEXT_OUTBOX_ID), as the rowid was since step 9,
 * so entries keep their order. The due queries already read the whole table,
 * which holds only what is not yet delivered.
 *
 * The waiting entries are carried over through `meta`, one meta row each
 * (a table of the newest schema, so the query-plan guard can explain every
 * statement; no value grows past the 2 MB a row may hold), in the step's
 * one transaction.
 */

const COLUMNS = "id, kind, ref, payload, version, attempts, next_attempt_at, last_error, created_at";
const FROM_JSON = Array.from({ length: COLUMNS.split(",").length }, (_, i) => `m.value ->> ${i}`).join(", ");
/** The meta keys of the carried rows: 'outbox_step_11:<id>', a range of meta's primary key. */
const chunks = (key: string) => `${key} >= 'outbox_step_11:' AND ${key} < 'outbox_step_11;'`;

export const OUTBOX_STEP_11: readonly string[] = [
	`INSERT INTO meta (key, value) SELECT 'outbox_step_11:' || id, json_array(${COLUMNS}) FROM outbox`,
	`DROP TABLE outbox`,
	`CREATE TABLE outbox (
	id INTEGER NOT NULL,
	kind TEXT NOT NULL,
	ref TEXT NOT NULL PRIMARY KEY,
	payload TEXT NOT NULL,
	version INTEGER NOT NULL DEFAULT 0,
	attempts INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER NOT NULL,
	last_error TEXT,
	created_at TEXT NOT NULL
) WITHOUT ROWID`,
	`INSERT INTO outbox (${COLUMNS}) SELECT ${FROM_JSON} FROM meta m WHERE ${chunks("m.key")}`,
	`DELETE FROM meta WHERE ${chunks("key")}`,
];
