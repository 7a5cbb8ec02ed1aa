import type { ClawbackRow, RewardRow } from "./schema";

/**
 * Clawbacks: what a user owes after a refund took back credit that was
 * already redeemed (docs/rewards.md, "Refunds and clawbacks"). A debt
 * belongs to one balance row (unit, growth hack, campaign); the row's `owed`
 * is the running total of its unpaid clawbacks, kept in the same transaction
 * as every change to them. Debts are paid off by the row's approved wallet
 * rewards, oldest debt first (see settleOwed in mutations.ts). The SQL of
 * the clawbacks table lives here; amounts are hundredths.
 */

/** The balance row a reward or a debt belongs to. */
export type BalanceKey = {
	rewardunit: string;
	growthhack: string;
	campaignid: number;
};

/** Unpaid clawbacks of one balance row. */
export function owedOf(sql: SqlStorage, key: BalanceKey): number {
	return (
		sql
			.exec<{ owed: number }>(
				"SELECT owed FROM balances WHERE rewardunit = ? AND growthhack = ? AND campaignid = ?",
				key.rewardunit,
				key.growthhack,
				key.campaignid,
			)
			.toArray()[0]?.owed ?? 0
	);
}

function moveOwed(sql: SqlStorage, key: BalanceKey, delta: number): void {
	// The reward that caused the debt already has its balance row, so this only updates.
	sql.exec(
		"UPDATE balances SET owed = owed + ? WHERE rewardunit = ? AND growthhack = ? AND campaignid = ?",
		delta,
		key.rewardunit,
		key.growthhack,
		key.campaignid,
	);
}

/** Records a debt left by reward `seq` and adds it to its row's `owed`. */
export function addClawback(
	sql: SqlStorage,
	debt: { key: BalanceKey; seq: number; customid: string; refundid: string; amount: number; nowIso: string },
): void {
	sql.exec(
		`INSERT INTO clawbacks (rewardunit, growthhack, campaignid, seq, customid, refundid, amount, paid, created_at, updated_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
		debt.key.rewardunit,
		debt.key.growthhack,
		debt.key.campaignid,
		debt.seq,
		debt.customid,
		debt.refundid,
		debt.amount,
		debt.nowIso,
		debt.nowIso,
	);
	moveOwed(sql, debt.key, debt.amount);
}

/** Pays `amount` (at most what is owed) off the row's debts, oldest first, and lowers its `owed`. */
export function payClawbacks(sql: SqlStorage, key: BalanceKey, amount: number, nowIso: string): void {
	let left = amount;
	const open = sql
		.exec<ClawbackRow>(
			`SELECT * FROM clawbacks WHERE rewardunit = ? AND growthhack = ? AND campaignid = ? AND paid < amount ORDER BY id`,
			key.rewardunit,
			key.growthhack,
			key.campaignid,
		)
		.toArray();
	for (const debt of open) {
		if (left <= 0) break;
		const take = Math.min(debt.amount - debt.paid, left);
		sql.exec("UPDATE clawbacks SET paid = paid + ?, updated_at = ? WHERE id = ?", take, nowIso, debt.id);
		left -= take;
	}
	if (left > 0) throw new RangeError(`paid ${amount} off debts of ${JSON.stringify(key)}, ${left} more than owed`);
	moveOwed(sql, key, -amount);
}

/** The balance rows that owe something. */
export function rowsWithOwed(sql: SqlStorage): BalanceKey[] {
	return sql.exec<BalanceKey>("SELECT rewardunit, growthhack, campaignid FROM balances WHERE owed > 0").toArray();
}

/**
 * The rewards of a row that can pay off its debts, oldest first: approved
 * wallet rewards with something left, not locked by a transaction other than
 * `ownTxid` (a locked reward is settled when its lock goes).
 */
export function settlingRewards(sql: SqlStorage, key: BalanceKey, ownTxid?: string): RewardRow[] {
	return sql
		.exec<RewardRow>(
			`SELECT * FROM rewards WHERE status = 'Approved' AND rewardtype = 'InstoreCredits'
			   AND rewardunit = ? AND growthhack = ? AND campaignid = ? AND amount - reversed - redeemed - settled > 0
			   AND seq NOT IN (SELECT seq FROM reward_locks WHERE txid IS NOT ?) ORDER BY seq`,
			key.rewardunit,
			key.growthhack,
			key.campaignid,
			ownTxid ?? null,
		)
		.toArray();
}

/** Every clawback of the ledger, oldest first (tests and admin). */
export function listClawbacks(sql: SqlStorage): ClawbackRow[] {
	return sql.exec<ClawbackRow>("SELECT * FROM clawbacks ORDER BY id").toArray();
}

/** What is left of a reward to redeem or to pay debts with (hundredths). */
export const restOf = (row: Pick<RewardRow, "amount" | "reversed" | "redeemed" | "settled">) =>
	row.amount - row.reversed - row.redeemed - row.settled;
