import { z } from "zod";
import { nowIso } from "../domain/dates";
import type { SqlCondition } from "./outbox-events";

const decisionRow = z.object({ decision: z.enum(["commit", "abort"]) });
export type Decision = z.output<typeof decisionRow>["decision"];

/**
 * Records `wanted` as the decision of transaction `txid` unless one is
 * already stored, and answers the stored one (one D1 round trip: the batch is
 * a transaction, which also runs the `withDecision` statements). The first writer wins, so a coordinator deciding commit and
 * a ledger deciding abort at the end of its lease can never both act.
 */
export async function decideOnce(
	db: D1Database,
	appid: string,
	txid: string,
	wanted: Decision,
	withDecision: D1PreparedStatement[] = [],
): Promise<Decision> {
	const results = await db.batch([
		db
			.prepare("INSERT INTO ledger_decisions (txid, appid, decision, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (txid) DO NOTHING")
			.bind(txid, appid, wanted, nowIso()),
		// In the decision's transaction: what must exist exactly when it does (guarded by committedCondition).
		...withDecision,
		db.prepare("SELECT decision FROM ledger_decisions WHERE txid = ?").bind(txid),
	]);
	const row = results.at(-1)?.results[0];
	if (row === undefined) throw new Error(`decision of ${txid} not readable after its insert`);
	// A value this code does not know (written by hand, or by a later deploy) must stop the transaction, not be read as abort.
	const parsed = decisionRow.safeParse(row);
	if (!parsed.success) throw new Error(`ledger_decisions.decision of ${txid} is not commit or abort: ${JSON.stringify(row)}`);
	return parsed.data.decision;
}

/** True inside decideOnce's batch when the stored decision of `txid` is commit. */
export const committedCondition = (txid: string): SqlCondition => ({
	sql: "EXISTS (SELECT 1 FROM ledger_decisions WHERE txid = ? AND decision = 'commit')",
	args: [txid],
});

/** Deletes decisions older than `maxAgeMs` (every lease is far shorter); returns how many. */
export async function deleteOldDecisions(db: D1Database, maxAgeMs: number, nowMs = Date.now()): Promise<number> {
	const result = await db
		.prepare("DELETE FROM ledger_decisions WHERE created_at < ?")
		.bind(new Date(nowMs - maxAgeMs).toISOString())
		.run();
	return result.meta.changes;
}
