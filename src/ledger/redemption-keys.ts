import type { z } from "zod";
import { Refused } from "./refused";
import { readLedgerJson } from "./stored-json";
import type { TxContext } from "./transaction-types";
import type { LedgerIdempotency } from "./types";

/** Ledger copies outlive the Worker's 24 h record, so a retry the Worker has forgotten still cannot debit twice. */
const KEEP_MS = 48 * 3600 * 1000;

/**
 * Runs `fn` once per Idempotency-Key, inside the caller's transaction: the
 * key and `fn`'s result are recorded with the change itself, so no crash can
 * separate them. A repeat with the same fingerprint answers the recorded
 * result (read back through `schema`) and writes nothing; another
 * fingerprint is refused. A refusal of `fn` rolls everything back, the key
 * included.
 */
export function withIdempotencyKey<T>(tx: TxContext, idempotency: LedgerIdempotency | undefined, schema: z.ZodType<T>, fn: () => T): T {
	if (!idempotency) return fn();
	const known = tx.sql
		.exec<{ fingerprint: string; result: string }>("SELECT fingerprint, result FROM idempotency_keys WHERE key = ?", idempotency.key)
		.toArray()[0];
	if (known) {
		if (known.fingerprint !== idempotency.fingerprint) {
			throw new Refused({ code: "idempotency_key_reused", message: "This Idempotency-Key was used for another request; use a new key." });
		}
		return readLedgerJson("idempotency_keys", "result", known.result, schema);
	}
	const result = fn();
	tx.sql.exec("DELETE FROM idempotency_keys WHERE created_at < ?", tx.nowMs - KEEP_MS);
	tx.sql.exec(
		"INSERT INTO idempotency_keys (key, fingerprint, result, created_at) VALUES (?, ?, ?, ?)",
		idempotency.key,
		idempotency.fingerprint,
		JSON.stringify(result),
		tx.nowMs,
	);
	return result;
}
