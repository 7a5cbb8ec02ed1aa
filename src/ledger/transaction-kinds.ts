import { seqOfRewardId } from "../domain/ledger-ids";
import { queueRewardAudits, rewardsBefore } from "./audit";
import { Refused } from "./refused";
import { applyReversal, eventRewardIds } from "./reversal";
import { applyStatusChanges } from "./status-changes";
import type { LedgerOperation, LedgerOperationResult, TxContext } from "./transaction-types";

/**
 * The changes a ledger can take part in through a multi-ledger transaction
 * (prepare / commit / abort, see transactions.ts and
 * coordination/ledger-transaction.ts), or apply alone in one call.
 *
 * To add one (a refund, say): add its shape to `LedgerOperation` (transaction-types.ts) and an entry
 * to `TRANSACTION_KINDS`: which rewards it locks, and how it applies. `apply`
 * runs inside one storage transaction and throws `Refused` for an expected
 * failure; prepare runs it as a dry run, so it must check everything commit
 * depends on.
 */

interface TransactionKind<O extends LedgerOperation> {
	/**
	 * The reward ids the operation reads or changes: locked from prepare to
	 * commit or abort. Read inside the prepare's transaction, so a kind may
	 * look them up (a refund locks every reward of its event).
	 */
	rewards(operation: O, sql: SqlStorage, userkey: string): string[];
	/** Checks and applies; `ownTxid` is the transaction whose locks it may pass through. */
	apply(tx: TxContext, operation: O, ownTxid?: string): LedgerOperationResult;
}

type Kinds = { [K in LedgerOperation["kind"]]: TransactionKind<Extract<LedgerOperation, { kind: K }>> };

export const TRANSACTION_KINDS: Kinds = {
	status: {
		rewards: (operation) => operation.changes.map((c) => c.rewarddtlid),
		apply: (tx, operation, ownTxid) => applyStatusChanges(tx, operation.changes, ownTxid),
	},
	reverse: {
		rewards: (operation, sql, userkey) => eventRewardIds(sql, userkey, operation),
		apply: (tx, operation, ownTxid) => applyReversal(tx, operation, ownTxid),
	},
};

/** Applies `operation` with the entry of its kind. */
export function applyOperation(tx: TxContext, operation: LedgerOperation, ownTxid?: string): LedgerOperationResult {
	const kind = TRANSACTION_KINDS[operation.kind] as TransactionKind<LedgerOperation>;
	if (!kind) throw new Refused({ code: "invalid_operation", message: `unknown ledger operation ${operation.kind}` });
	const before = operation.audit ? rewardsBefore(tx, lockedSeqs(tx.sql, tx.userkey, operation)) : null;
	const result = kind.apply(tx, operation, ownTxid);
	if (operation.audit && before) {
		queueRewardAudits(tx, operation.audit, operation.kind === "status" ? "reward.status" : "reward.reverse", before, result.rewards);
	}
	return result;
}

/** The rewards `operation` locks, as sequence numbers of this ledger; ids of other ledgers are left to apply's refusal. */
export function lockedSeqs(sql: SqlStorage, userkey: string, operation: LedgerOperation): number[] {
	const kind = TRANSACTION_KINDS[operation.kind] as TransactionKind<LedgerOperation>;
	const seqs = (kind?.rewards(operation, sql, userkey) ?? [])
		.map((id) => seqOfRewardId(id, userkey))
		.filter((s): s is number => s !== null);
	return [...new Set(seqs)];
}
