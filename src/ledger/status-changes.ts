import { assertUnlocked } from "./locks";
import { rewardOrRefuse, updateReward } from "./mutations";
import { reconcileReward } from "./payouts";
import { refuseIfErased } from "./privacy";
import { Refused } from "./refused";
import { toLedgerReward } from "./rows";
import type { RewardRow } from "./schema";
import { transitionError } from "./status";
import type { LedgerOperationResult, TxContext } from "./transaction-types";
import type { StatusChange } from "./types";

/**
 * Status changes applied to the ledger: the ones a caller asks for
 * (changerewardstatus, checked by status.ts) and the automatic approval of
 * a reward whose hold has ended (run by the alarm).
 */

/**
 * changerewardstatus within one ledger: every change or none (decisions.md
 * §4). The entry's message becomes the comment; any change made by hand ends
 * the automatic approval of a hold. An erased user's rewards change no more.
 */
export function applyStatusChanges(tx: TxContext, changes: StatusChange[], ownTxid?: string): LedgerOperationResult {
	// The commit of a change prepared before an erasure goes through: its decision was already taken.
	if (ownTxid === undefined) refuseIfErased(tx.sql);
	const touched = new Map<number, RewardRow>();
	for (const change of changes) {
		const before = rewardOrRefuse(tx, change.rewarddtlid);
		assertUnlocked(tx.sql, tx.userkey, before.seq, ownTxid);
		const refusal = transitionError(
			{
				status: before.status,
				redeemed: before.redeemed + before.settled,
				fullyReversed: before.amount > 0 && before.reversed >= before.amount,
			},
			change.status,
		);
		if (refusal) throw new Refused({ code: "invalid_status_transition", rewarddtlid: change.rewarddtlid, message: refusal });
		const patch = { status: change.status, comment: change.message ?? before.comment, hold_until: null };
		const changed = before.status !== change.status;
		// A status change changes what a Stripe reward owes: the reconcile books the difference (payouts.ts).
		const after = updateReward(
			tx,
			before,
			{ ...patch, ...reconcileReward(tx, { ...before, ...patch }) },
			changed ? { type: "reward.status_changed", extra: { previousstatus: before.status } } : undefined,
		);
		touched.set(after.seq, after);
	}
	return { rewards: [...touched.values()].map((row) => toLedgerReward(tx.userkey, row)) };
}

/** Approves the rewards whose hold has ended. A locked reward waits for its transaction; the hold is approved on the alarm after the lock goes. */
export function approveEndedHolds(tx: TxContext): void {
	const ended = tx.sql
		.exec<RewardRow>(
			`SELECT * FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL AND hold_until <= ?
				   AND seq NOT IN (SELECT seq FROM reward_locks) ORDER BY seq`,
			new Date(tx.nowMs).toISOString(),
		)
		.toArray();
	for (const row of ended) {
		const patch = { status: "Approved" as const, hold_until: null };
		updateReward(
			tx,
			row,
			{ ...patch, ...reconcileReward(tx, { ...row, ...patch }) },
			{ type: "reward.status_changed", extra: { previousstatus: row.status } },
		);
	}
}

/** When the next hold of an unlocked reward ends (ISO; NULL when none), as a subquery for the FlushSchedule. */
export const HOLD_END_SQL = `SELECT MIN(hold_until) FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL
   AND seq NOT IN (SELECT seq FROM reward_locks)`;
