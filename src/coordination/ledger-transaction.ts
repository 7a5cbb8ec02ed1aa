import { committedCondition, decideOnce } from "../db/decisions";
import type { SqlCondition } from "../db/outbox-events";
import { newTransactionId } from "../domain/ids";
import { ledgerFor } from "../ledger/stub";
import type { LedgerOperation, LedgerOperationResult } from "../ledger/transaction-types";
import type { LedgerError, LedgerResult } from "../ledger/types";

/**
 * All-or-none changes across several users' ledgers: a two-phase commit
 * with the decision stored in D1.
 *
 * 1. prepare: every ledger checks its part (a dry run) and locks the rewards
 *    it names for a lease; nothing else can change them meanwhile (a
 *    redemption meeting one gets `reward_locked`).
 * 2. decide: once all prepared, `commit` is written to D1 `ledger_decisions`
 *    (first writer wins: a ledger whose lease ran out writes `abort`).
 * 3. commit (or abort) every ledger. A commit that does not arrive (the
 *    Worker died, the RPC failed) is applied by the ledger itself when its
 *    lease ends: it reads the decision from D1. So once `commit` is stored,
 *    every part is applied; before that, none is.
 *
 * A part for one ledger only skips all this and applies in one transaction.
 * Used by changerewardstatus; any operation of ledger/transaction-kinds.ts
 * (refunds, say) can run through it.
 */

/** The lease a prepare asks for: long enough for the commit to arrive, short enough that a dead coordinator blocks little. */
export const DEFAULT_LEASE_MS = 15_000;

/** One ledger's part of a transaction. */
export interface LedgerPart {
	userkey: string;
	operation: LedgerOperation;
}

export interface CoordinationOptions {
	leaseMs?: number;
	txid?: string;
	/**
	 * D1 statements to write in the same transaction as the commit decision,
	 * from what each part's commit will answer (its prepare's preview), each
	 * guarded by `committed`: they exist exactly when the change is certain
	 * to apply. With this, even one part goes through prepare and commit.
	 */
	withDecision?: (previews: (LedgerOperationResult | undefined)[], committed: SqlCondition) => D1PreparedStatement[];
}

export type CoordinatedResult = LedgerResult<{ txid: string | null; results: LedgerOperationResult[] }>;

const retryLater = (message: string): LedgerError => ({ code: "reward_locked", rewarddtlid: "", message });

/**
 * Applies every part or none. Answers the first refusal (in the order of
 * `parts`) when a part cannot apply. A failure of the machinery itself (D1
 * down before the decision) aborts and throws.
 */
export async function runAcrossLedgers(
	env: Env,
	appid: string,
	parts: LedgerPart[],
	options: CoordinationOptions = {},
): Promise<CoordinatedResult> {
	const ledgers = parts.map((part) => ({ ...part, stub: ledgerFor(env, appid, part.userkey) }));
	if (ledgers.length === 1 && !options.withDecision) {
		const only = ledgers[0]!;
		const result = await only.stub.execute(only.operation);
		if (!result.ok) return result;
		const { ok: _ok, ...value } = result;
		return { ok: true, txid: null, results: [value] };
	}
	const txid = options.txid ?? newTransactionId();
	const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
	const abortAll = () =>
		Promise.all(
			ledgers.map((l) =>
				l.stub
					.abortTransaction(txid)
					.catch((error: unknown) => console.error("ledger transaction: abort failed", { txid, error: String(error) })),
			),
		);

	const prepared = await Promise.allSettled(ledgers.map((l) => l.stub.prepareTransaction(txid, l.operation, leaseMs)));
	const thrown = prepared.find((p) => p.status === "rejected");
	if (thrown) {
		await abortAll();
		throw thrown.reason;
	}
	const refusal = prepared.map((p) => (p.status === "fulfilled" ? p.value : null)).find((r) => r !== null && !r.ok);
	if (refusal && !refusal.ok) {
		await abortAll();
		return refusal;
	}

	const previews = prepared.map((p) => (p.status === "fulfilled" && p.value.ok ? p.value.preview : undefined));
	const alongside = options.withDecision?.(previews, committedCondition(txid)) ?? [];
	let decision: "commit" | "abort";
	try {
		decision = await decideOnce(env.DB, appid, txid, "commit", alongside);
	} catch (error) {
		// Unknown whether the decision was stored: the ledgers will read it (or write abort) when their leases end.
		console.error("ledger transaction: decision not recorded", { txid, error: String(error) });
		throw error;
	}
	if (decision === "abort") {
		// A lease ran out before the decision: a ledger already released its part.
		await abortAll();
		return { ok: false, error: retryLater("the change took too long and was cancelled; retry") };
	}

	const committed = await Promise.allSettled(ledgers.map((l) => l.stub.commitTransaction(txid)));
	const results: LedgerOperationResult[] = [];
	for (const [i, outcome] of committed.entries()) {
		if (outcome.status === "fulfilled" && outcome.value.ok) {
			results.push(outcome.value.result);
			continue;
		}
		// The decision is stored: the ledger applies it when its lease ends, so the change stands.
		const why = outcome.status === "rejected" ? String(outcome.reason) : JSON.stringify(outcome.value);
		console.error("ledger transaction: commit not confirmed; the ledger completes it at lease end", {
			txid,
			userkey: ledgers[i]?.userkey,
			why,
		});
		results.push({ rewards: [] });
	}
	return { ok: true, txid, results };
}
