import { type LedgerAudit, queueRewardAudits, rewardsBefore } from "./audit";
import { eventRewards } from "./by-friend";
import { assertUnlocked } from "./locks";
import { rewardRow, updateReward } from "./mutations";
import { payoutStatePatch, reconcileReward } from "./payouts";
import { toLedgerReward } from "./rows";
import type { RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";
import type { LedgerReward, RewardStatus } from "./types";

/**
 * Chargebacks (issue 47, docs/stripe.md "Disputes"): the rewards of one
 * conversion in this ledger held while a Stripe dispute of its payment is
 * open, and released when it closes. The D1 side (db/stripe-disputes.ts)
 * decides which phase applies; each phase here is idempotent, so duplicated,
 * concurrent and reordered deliveries converge:
 *
 * - `hold`: each reward of the event not held by this dispute yet is
 *   recorded in `dispute_holds` with its status, then an Approved (or held
 *   for review) reward becomes `UnderReview`, out of automatic approval, and
 *   a credit still `due` (never sent: its key never left) is cancelled, so
 *   nothing more is paid while the dispute is open (a debit still due
 *   leaves as booked: it takes back, never pays). A reward
 *   already paid, Suspicious or Rejected keeps its status (none of them
 *   books a new payout while it holds it). Every held reward's
 *   comment names the dispute (and its audit entry, the reward's history).
 * - `restore` (won): each held reward still as the hold left it goes back to
 *   its status (and its review hold's end); a Stripe reward then books what
 *   it owes again (a new payout under a new key). A reward an operator
 *   changed meanwhile keeps the operator's status.
 * - `release` (lost): the reversal as a full refund already ran
 *   (reversal-work.ts, the clawbacks as for a refund); the holds are dropped.
 */

export type DisputePhase = "hold" | "restore" | "release";

export interface DisputeRequest {
	customid: string;
	/** The event's user: the event's rewards are sought by it (ledger schema step 17); absent (an older Worker), by customid. */
	friendUserkey?: string;
	dispute: string;
	phase: DisputePhase;
	audit: LedgerAudit;
}

interface HoldRow extends Record<string, SqlStorageValue> {
	seq: number;
	previous_status: RewardStatus;
	previous_hold_until: string | null;
}

/** Statuses a hold moves to UnderReview: those that pay or will pay. */
const HELD: readonly RewardStatus[] = ["Approved", "UnderReview"];

/** The status a hold leaves a reward in. */
const heldStatus = (previous: RewardStatus): RewardStatus => (HELD.includes(previous) ? "UnderReview" : previous);

const comments = {
	hold: (d: string) => `Stripe dispute ${d} opened on this payment: held until it closes.`,
	restore: (d: string) => `Stripe dispute ${d} won: released.`,
	release: (d: string) => `Stripe dispute ${d} lost: reversed as a full refund.`,
};

/**
 * The comment a dispute phase leaves: the dispute's, except on a reward whose payout Stripe refused (its code and
 * request id stay until the operator's retry: docs/stripe.md) or whose outcome is unknown (what the resolver says),
 * as for a refund (reversal.ts). The dispute stays named in the reward's audit entry (`reward.dispute`) and the
 * app's Stripe cases. Found by the history checker (seed 2 with the test-mode tenant).
 */
const commentOf = (row: RewardRow, text: string) => (row.payout_state === "failed" || row.payout_state === "unknown" ? row.comment : text);

export function applyDisputePhase(tx: TxContext, request: DisputeRequest): { rewards: LedgerReward[] } {
	const { sql } = tx;
	const rows = eventRewards(sql, request.customid, request.friendUserkey).map((r) => rewardRow(sql, r.seq)!);
	// A reward in another change's multi-ledger transaction (a refund being applied) waits: reward_locked, retried.
	for (const row of rows) assertUnlocked(sql, tx.userkey, row.seq);
	const before = rewardsBefore(
		tx,
		rows.map((r) => r.seq),
	);
	const changed = request.phase === "hold" ? hold(tx, rows, request.dispute) : release(tx, request.dispute, request.phase === "restore");
	const after = changed.map((row) => toLedgerReward(tx.userkey, row));
	queueRewardAudits(tx, request.audit, "reward.dispute", before, after);
	return { rewards: after };
}

function hold(tx: TxContext, rows: RewardRow[], dispute: string): RewardRow[] {
	const changed: RewardRow[] = [];
	for (const row of rows) {
		const placed = tx.sql
			.exec(
				`INSERT INTO dispute_holds (dispute, seq, previous_status, previous_hold_until, at) VALUES (?, ?, ?, ?, ?)
				 ON CONFLICT (dispute, seq) DO NOTHING RETURNING seq`,
				dispute,
				row.seq,
				row.status,
				row.hold_until,
				tx.nowMs,
			)
			.toArray();
		if (placed.length === 0) continue;
		const status = heldStatus(row.status);
		// A credit never sent of a reward this hold holds may be withdrawn (its key never left); a won dispute books
		// what the reward owes again, under a new key, once its status pays again. A debit (a refund's, or this
		// dispute's own loss reversed before this late hold) stays: it takes back what the reward no longer owes, and
		// nothing would book it again (no reconcile runs here; a lost dispute releases a Rejected reward unchanged);
		// a reward the hold does not hold (Rejected, Rewarded, Suspicious) keeps its records. Found by the history
		// checker, seed 1.
		if (HELD.includes(row.status))
			tx.sql.exec(
				"UPDATE payouts SET state = 'cancelled', updated_at = ? WHERE seq = ? AND state = 'due' AND amount > 0",
				tx.nowMs,
				row.seq,
			);
		const held = HELD.includes(row.status)
			? { status, hold_until: null, comment: commentOf(row, comments.hold(dispute)) }
			: { comment: commentOf(row, comments.hold(dispute)) };
		// The reward row's payout summary follows its records (the admin list's `payoutstate`).
		const patch = { ...held, ...payoutStatePatch(tx, row) };
		const event = status !== row.status ? { type: "reward.status_changed" as const, extra: { previousstatus: row.status } } : undefined;
		changed.push(updateReward(tx, row, patch, event));
	}
	return changed;
}

function release(tx: TxContext, dispute: string, restore: boolean): RewardRow[] {
	const holds = tx.sql
		.exec<HoldRow>("SELECT seq, previous_status, previous_hold_until FROM dispute_holds WHERE dispute = ? ORDER BY seq", dispute)
		.toArray();
	const changed: RewardRow[] = [];
	for (const held of holds) {
		tx.sql.exec("DELETE FROM dispute_holds WHERE dispute = ? AND seq = ?", dispute, held.seq);
		const row = rewardRow(tx.sql, held.seq);
		// Gone, or changed by someone since the hold (an operator, a refund): theirs is the last word.
		if (!row || row.status !== heldStatus(held.previous_status)) continue;
		if (!restore) {
			changed.push(updateReward(tx, row, { comment: commentOf(row, comments.release(dispute)) }));
			continue;
		}
		const patch = {
			status: held.previous_status,
			hold_until: held.previous_hold_until,
			comment: commentOf(row, comments.restore(dispute)),
		};
		const event =
			held.previous_status !== row.status ? { type: "reward.status_changed" as const, extra: { previousstatus: row.status } } : undefined;
		const after = updateReward(tx, row, patch, event);
		// What the restored status owes is booked here (a reward write books nothing: payouts.ts lists its call
		// sites). A payout that waited for a customer (updateuser set one during the dispute, while nothing could be
		// booked) is booked again, as updateuser would have (force): without a customer it only waits again.
		const booked = reconcileReward(tx, after, after.payout_state === "waiting_customer");
		changed.push(Object.keys(booked).length > 0 ? updateReward(tx, after, booked) : after);
	}
	return changed;
}
