import { redactJson } from "../privacy/redact";
import type { LedgerOutboxEntry } from "./schema";

/**
 * Erasure inside one ledger (run in one storage transaction): the personal
 * fields copied from a person onto rewards (the friend snapshot) are
 * cleared, and webhooks still waiting in the ledger's outbox lose the
 * person's values. Amounts, statuses and versions are untouched, so every
 * balance stays exact. Idempotent.
 */
export function erasePersonInLedger(sql: SqlStorage, personUserkey: string, values: string[]): { rewards: number; webhooks: number } {
	const rewards = sql.exec(
		`UPDATE rewards SET friend_email = NULL, friend_name = NULL, friend_profileimage = NULL
		 WHERE friend_userkey = ? AND (friend_email IS NOT NULL OR friend_name IS NOT NULL OR friend_profileimage IS NOT NULL)`,
		personUserkey,
	).rowsWritten;
	let webhooks = 0;
	for (const entry of sql
		.exec<Pick<LedgerOutboxEntry, "id" | "payload">>("SELECT id, payload FROM outbox WHERE kind = 'webhook'")
		.toArray()) {
		const redacted = redactJson(entry.payload, { userkey: personUserkey, values });
		if (redacted === null) continue;
		sql.exec("UPDATE outbox SET payload = ? WHERE id = ?", redacted, entry.id);
		webhooks++;
	}
	return { rewards, webhooks };
}
