import { rewardId } from "../domain/ledger-ids";
import { Refused } from "./refused";
import type { TransactionRow } from "./schema";

/**
 * Reward locks of prepared multi-ledger transactions (transactions.ts). A
 * locked reward may only be changed by the commit of the transaction holding
 * it; everything else that would change it is refused with `reward_locked`
 * (retryable: the lock goes at commit, abort or the end of the lease).
 */

/** The id of the transaction locking reward `seq`, or null. */
export function lockHolder(sql: SqlStorage, seq: number): string | null {
	return sql.exec<{ txid: string }>("SELECT txid FROM reward_locks WHERE seq = ?", seq).toArray()[0]?.txid ?? null;
}

/** Refuses when reward `seq` is locked by a transaction other than `ownTxid`. */
export function assertUnlocked(sql: SqlStorage, userkey: string, seq: number, ownTxid?: string): void {
	const holder = lockHolder(sql, seq);
	if (holder !== null && holder !== ownTxid) {
		const rewarddtlid = rewardId(userkey, seq);
		throw new Refused({
			code: "reward_locked",
			rewarddtlid,
			message: "the reward is part of a change in progress; retry in a moment",
		});
	}
}

export function lockRewards(sql: SqlStorage, txid: string, seqs: Iterable<number>): void {
	for (const seq of seqs) sql.exec("INSERT INTO reward_locks (seq, txid) VALUES (?, ?)", seq, txid);
}

export function releaseLocks(sql: SqlStorage, txid: string): void {
	sql.exec("DELETE FROM reward_locks WHERE txid = ?", txid);
}

export function transactionRow(sql: SqlStorage, txid: string): TransactionRow | undefined {
	return sql.exec<TransactionRow>("SELECT * FROM ledger_transactions WHERE txid = ?", txid).toArray()[0];
}

export function insertTransaction(
	sql: SqlStorage,
	row: Pick<TransactionRow, "txid" | "kind" | "payload" | "state" | "lease_until" | "updated_at">,
): void {
	sql.exec(
		"INSERT INTO ledger_transactions (txid, kind, payload, state, lease_until, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
		row.txid,
		row.kind,
		row.payload,
		row.state,
		row.lease_until,
		row.updated_at,
	);
}

export function finishTransaction(sql: SqlStorage, txid: string, state: "committed" | "aborted", result: unknown, nowMs: number): void {
	sql.exec(
		"UPDATE ledger_transactions SET state = ?, result = ?, updated_at = ? WHERE txid = ?",
		state,
		result === undefined ? null : JSON.stringify(result),
		nowMs,
		txid,
	);
	releaseLocks(sql, txid);
}

/** Prepared transactions whose lease has ended, oldest first. */
export function expiredTransactions(sql: SqlStorage, nowMs: number): TransactionRow[] {
	return sql
		.exec<TransactionRow>("SELECT * FROM ledger_transactions WHERE state = 'prepared' AND lease_until <= ? ORDER BY lease_until", nowMs)
		.toArray();
}

/** The earliest end of a running lease (epoch ms; NULL when none), as a subquery for the FlushSchedule. */
export const LEASE_END_SQL = "SELECT MIN(lease_until) FROM ledger_transactions WHERE state = 'prepared'";

/** Finished transactions are kept a day, so a late retry of a commit or abort still gets its answer. */
export function forgetFinishedTransactions(sql: SqlStorage, nowMs: number): void {
	sql.exec("DELETE FROM ledger_transactions WHERE state <> 'prepared' AND updated_at < ?", nowMs - 86_400_000);
}
