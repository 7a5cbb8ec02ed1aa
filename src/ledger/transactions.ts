import { decideOnce } from "../db/decisions";
import {
	expiredTransactions,
	finishTransaction,
	forgetFinishedTransactions,
	insertTransaction,
	lockRewards,
	transactionRow,
} from "./locks";
import { settleAllOwed } from "./mutations";
import { Refused } from "./refused";
import type { TransactionRow } from "./schema";
import { ledgerOperationResultSchema, ledgerOperationSchema, readLedgerJson } from "./stored-json";
import { applyOperation, lockedSeqs } from "./transaction-kinds";
import type { LedgerOperation, LedgerOperationResult } from "./transaction-types";
import type { LedgerResult } from "./types";
import type { LedgerWriter } from "./writer";

/**
 * The ledger's side of a multi-ledger transaction (the coordinator is
 * coordination/ledger-transaction.ts): prepare locks, commit or abort
 * releases, and the end of a lease resolves a transaction whose commit or
 * abort never arrived from the decision stored in D1. The rows and locks
 * themselves are in locks.ts.
 */

/** Longest lease a prepare may ask for: a lock must never outlive a stuck coordinator by much. */
export const MAX_LEASE_MS = 60_000;

/** A prepare's answer; `preview` (a new prepare only) is what its commit will answer. */
export interface PrepareAnswer {
	state: "prepared" | "committed";
	preview?: LedgerOperationResult;
}

/**
 * Phase one: checks that `operation` would apply (a dry run), then locks the
 * rewards it names for `leaseMs`, so nothing else changes them until
 * commit, abort or the end of the lease. A reward locked by another
 * transaction is refused with `reward_locked`. Idempotent per `txid`: a
 * repeat answers the state reached; a txid already aborted is refused.
 */
export function prepareTransaction(
	w: LedgerWriter,
	txid: string,
	operation: LedgerOperation,
	leaseMs: number,
): LedgerResult<PrepareAnswer> {
	const known = transactionRow(w.sql, txid);
	if (known) return knownState(known);
	const lease = Math.min(Math.max(leaseMs, 1_000), MAX_LEASE_MS);
	const dry = w.attempt((tx) => applyOperation(tx, operation), true);
	if (!dry.ok) return dry;
	// No flush: nothing changed but the locks; the alarm is armed for the end of the lease.
	w.write(() => {
		const now = Date.now();
		forgetFinishedTransactions(w.sql, now);
		insertTransaction(w.sql, {
			txid,
			kind: operation.kind,
			payload: JSON.stringify(operation),
			state: "prepared",
			lease_until: now + lease,
			updated_at: now,
		});
		lockRewards(w.sql, txid, lockedSeqs(w.sql, w.identity.userkey, operation));
	}, false);
	// What the commit will answer: the locks keep every reward it reads unchanged until then.
	return { ok: true, state: "prepared", preview: { rewards: dry.rewards, ...(dry.reversal ? { reversal: dry.reversal } : {}) } };
}

/**
 * Phase two: applies the prepared operation and releases its locks, in one
 * transaction. Only called once the decision `commit` is stored in D1, so
 * it applies even after the lease ended, as long as the ledger has not
 * aborted it yet. Idempotent: a repeat answers the first result.
 */
export function commitTransaction(w: LedgerWriter, txid: string): LedgerResult<{ result: LedgerOperationResult }> {
	return finish(w, txid, "committed");
}

/** Releases a prepared transaction without applying it. An unknown txid is recorded as aborted, so a late prepare is refused. */
export function abortTransaction(w: LedgerWriter, txid: string): LedgerResult<{ state: "aborted" | "committed" }> {
	const known = transactionRow(w.sql, txid);
	if (known?.state === "committed") return { ok: true, state: "committed" };
	if (!known) {
		w.transactionSync(() => {
			const now = Date.now();
			insertTransaction(w.sql, { txid, kind: "unknown", payload: "null", state: "aborted", lease_until: now, updated_at: now });
		});
		return { ok: true, state: "aborted" };
	}
	const done = finish(w, txid, "aborted");
	return done.ok ? { ok: true, state: "aborted" } : done;
}

function knownState(row: TransactionRow): LedgerResult<PrepareAnswer> {
	if (row.state === "aborted") return { ok: false, error: { code: "transaction_aborted", message: `transaction ${row.txid} was aborted` } };
	return { ok: true, state: row.state };
}

/**
 * Commits or aborts. A commit that throws anything but `Refused` (a stored
 * payload this code cannot read, a bug) must not keep its locks: its
 * transaction rolled back, so it is aborted instead, loudly, and answered as
 * aborted. Left locked, the rewards would be refused to everything and the
 * lease-end alarm would retry the same failing commit for ever.
 */
function finish(w: LedgerWriter, txid: string, state: "committed" | "aborted"): LedgerResult<{ result: LedgerOperationResult }> {
	try {
		return apply(w, txid, state);
	} catch (error) {
		if (state === "aborted") throw error;
		console.error("ledger transaction: commit threw; aborted and its locks released", { txid, error: String(error) });
		const released = apply(w, txid, "aborted");
		if (!released.ok) return released;
		return { ok: false, error: { code: "transaction_aborted", message: `transaction ${txid} could not be applied (${String(error)})` } };
	}
}

function apply(w: LedgerWriter, txid: string, state: "committed" | "aborted"): LedgerResult<{ result: LedgerOperationResult }> {
	return w.attempt((tx) => {
		const row = transactionRow(w.sql, txid);
		if (!row) throw new Refused({ code: "transaction_aborted", message: `transaction ${txid} is unknown here` });
		if (row.state === "committed") {
			return { result: readLedgerJson("ledger_transactions", "result", row.result ?? "null", ledgerOperationResultSchema) };
		}
		if (row.state === "aborted") {
			if (state === "aborted") return { result: { rewards: [] } };
			throw new Refused({ code: "transaction_aborted", message: `transaction ${txid} was aborted` });
		}
		const result =
			state === "committed"
				? applyOperation(tx, readLedgerJson("ledger_transactions", "payload", row.payload, ledgerOperationSchema), txid)
				: { rewards: [] };
		finishTransaction(w.sql, txid, state, result, tx.nowMs);
		// Rewards this transaction kept locked could not pay off clawbacks meanwhile; they do now (clawbacks.ts).
		settleAllOwed(tx);
		return { result };
	});
}

/**
 * Ends the transactions whose lease ran out: the decision stored in D1
 * (or `abort`, written now when there is none) says whether to apply or
 * release. The locks stay until the decision is known. Throws when D1 is
 * unreachable (the caller retries later).
 */
export async function resolveExpiredTransactions(w: LedgerWriter, db: D1Database): Promise<void> {
	for (const row of expiredTransactions(w.sql, Date.now())) {
		const decision = await decideOnce(db, w.identity.appid, row.txid, "abort");
		const done = finish(w, row.txid, decision === "commit" ? "committed" : "aborted");
		if (!done.ok) {
			// Cannot happen while the locks hold (nothing else changed the rewards); if it does, release rather
			// than keep the rewards locked and the alarm spinning, and say so loudly.
			console.error("ledger transaction could not be committed at lease end; released", { txid: row.txid, error: done.error });
			finish(w, row.txid, "aborted");
		}
	}
}
