import { rewardId } from "../domain/ledger-ids";
import { fromHundredths } from "../rewards/money";
import { eventRewards } from "./by-friend";
import { addClawback } from "./clawbacks";
import { assertUnlocked } from "./locks";
import { isMilestoneKey, milestoneReward, reverseMilestoneEvents } from "./milestones";
import { asStored, keyOf, rewardRow, settleOwed, writeReward } from "./mutations";
import { reconcileReward } from "./payouts";
import { decideRefund, type PriorRefunds, reversalEffect, reversedTarget } from "./refund";
import { Refused } from "./refused";
import { toLedgerReward } from "./rows";
import type { RefundRow, RewardRow } from "./schema";
import { readLedgerJson, reversalOutcomeSchema, reverseOperationSchema } from "./stored-json";
import type { ReversalOutcome, ReversedReward, ReverseOperation, RewardSnapshot, TxContext } from "./transaction-types";
import type { LedgerReward } from "./types";

/**
 * The ledger's part of `reverseconversionevent` (docs/rewards.md, "Refunds
 * and clawbacks"): a ledger operation (transaction-kinds.ts), so a refund
 * reaching the friend's and the referrer's ledgers runs through the same
 * prepare/commit as any multi-ledger change and applies in both or neither.
 *
 * Every ledger taking part records the refund in its `refunds` table, keyed
 * by (customid, refundid): a repeat of a refund changes nothing and answers
 * what the first one did, and the running total refused beyond the
 * transaction value is read from there. Amounts are hundredths.
 */

/**
 * The ids of this ledger's rewards for the event: what a prepared reversal locks. Read by the event and its user
 * (`friendUserkey`, ledger schema step 17, by-friend.ts); a payload stored before step 17 has no user: by customid alone.
 */
export function eventRewardIds(
	sql: SqlStorage,
	userkey: string,
	operation: Pick<ReverseOperation, "customid" | "friendUserkey">,
): string[] {
	return eventRewards(sql, operation.customid, operation.friendUserkey).map((r) => rewardId(userkey, r.seq));
}

function priorRefunds(sql: SqlStorage, customid: string): PriorRefunds & { last: RefundRow | undefined; transactionvalue: number | null } {
	const rows = sql.exec<RefundRow>("SELECT * FROM refunds WHERE customid = ? ORDER BY created_at, refundid", customid).toArray();
	return {
		refunded: rows.reduce((sum, r) => sum + r.refundvalue, 0),
		full: rows.some((r) => r.full === 1),
		last: rows.at(-1),
		transactionvalue: rows[0]?.transactionvalue ?? null,
	};
}

/**
 * Two refunds of one event must not both be prepared: each was checked
 * against the total without the other. A reversal prepared in this ledger
 * for the same event (by another transaction) refuses this one as locked,
 * which the caller retries. Its rewards' locks alone would not do: an event
 * may have no reward in this ledger.
 */
function refuseIfAnotherPrepared(sql: SqlStorage, customid: string, ownTxid?: string): void {
	const prepared = sql
		.exec<{ payload: string }>(
			"SELECT payload FROM ledger_transactions WHERE state = 'prepared' AND kind = 'reverse' AND txid IS NOT ?",
			ownTxid ?? null,
		)
		.toArray();
	const sameEvent = (p: { payload: string }) =>
		readLedgerJson("ledger_transactions", "payload", p.payload, reverseOperationSchema).customid === customid;
	if (prepared.some(sameEvent)) {
		throw new Refused({
			code: "reward_locked",
			rewarddtlid: "",
			message: "another refund of this event is in progress; retry in a moment",
		});
	}
}

const snapshot = (row: RewardRow): RewardSnapshot => ({
	rewardstatus: row.status,
	reward: fromHundredths(row.amount - row.reversed),
	reversedamount: fromHundredths(row.reversed),
	redeemed: fromHundredths(row.redeemed),
});

/**
 * Takes back `target` of a reward in total: the unredeemed part leaves the
 * balance at once; the part already used becomes a clawback of the reward's
 * balance row. The caller then settles the row (settleOwed), once every
 * reward of the refund is reversed, so no debt is paid with credit the same
 * refund is about to take back.
 */
function reverseReward(
	tx: TxContext,
	row: RewardRow,
	target: number,
	refund: { customid: string; refundid: string; reason: string | null },
): { after: RewardRow; reported: ReversedReward } {
	const { status, debt } = reversalEffect(row, target);
	const ends = status !== row.status && (status === "Rejected" || status === "Rewarded");
	// A payout Stripe refused keeps its reason (code and request id) until it is retried: the operator acts on it (docs/stripe.md);
	// an unknown one keeps what the resolver says about it.
	const comment =
		row.payout_state === "failed" || row.payout_state === "unknown"
			? row.comment
			: (refund.reason ?? (status === "Rejected" && row.status !== "Rejected" ? "Reversed: the conversion was refunded." : row.comment));
	const patch = {
		reversed: target,
		status,
		comment,
		...(ends ? { hold_until: null } : {}),
		...(status === "Rewarded" && ends ? { rewarded_at: new Date(tx.nowMs).toISOString() } : {}),
	};
	// A reversal changes what a Stripe reward owes: the reconcile books the difference (payouts.ts).
	const after = writeReward(
		tx,
		row,
		{ ...patch, ...reconcileReward(tx, { ...row, ...patch }) },
		{
			type: "reward.reversed",
			extra: {
				previousstatus: row.status,
				reversedamount: fromHundredths(target - row.reversed),
				clawback: fromHundredths(debt),
				customid: refund.customid,
				refundid: refund.refundid,
			},
		},
	);
	if (debt > 0) {
		addClawback(tx.sql, {
			key: keyOf(row),
			seq: row.seq,
			customid: refund.customid,
			refundid: refund.refundid,
			amount: debt,
			nowIso: new Date(tx.nowMs).toISOString(),
		});
	}
	return {
		after,
		reported: {
			rewarddtlid: rewardId(tx.userkey, row.seq),
			userkey: tx.userkey,
			usertype: row.usertype,
			rewardunit: row.rewardunit,
			before: snapshot(row),
			after: snapshot(after),
			reversedamount: fromHundredths(target - row.reversed),
			clawback: fromHundredths(debt),
		},
	};
}

/**
 * The part a refund asks for: its `refundvalue`, or for a refunded total what
 * this ledger's refunds have not taken yet (0: nothing new, an older or
 * repeated total; null: the whole event, once the total reaches the value).
 */
function requestedPart(operation: ReverseOperation, refunded: number): number | null {
	const total = operation.refundedTotal;
	if (total == null) return operation.refundvalue;
	if (operation.transactionvalue === null || total >= operation.transactionvalue) return null;
	return Math.max(0, total - refunded);
}

/** Applies a refund in this ledger (checks first; a refusal rolls everything back). */
export function applyReversal(
	tx: TxContext,
	operation: ReverseOperation,
	ownTxid?: string,
): { rewards: LedgerReward[]; reversal: ReversalOutcome } {
	const { customid, refundid } = operation;
	refuseIfAnotherPrepared(tx.sql, customid, ownTxid);
	const known = tx.sql.exec<RefundRow>("SELECT * FROM refunds WHERE customid = ? AND refundid = ?", customid, refundid).toArray()[0];
	if (known) {
		if (operation.refundedTotal == null && known.requested !== operation.refundvalue) {
			throw new Refused({
				code: "refundid_reused",
				message: `refund ${refundid} of event ${customid} was recorded with another refundvalue`,
			});
		}
		const first = readLedgerJson("refunds", "outcome", known.outcome, reversalOutcomeSchema);
		return { rewards: [], reversal: { ...first, changed: false, repeat: true } };
	}
	const prior = priorRefunds(tx.sql, customid);
	const requested = requestedPart(operation, prior.refunded);
	const decision = requested === 0 ? ({ kind: "noop" } as const) : decideRefund(prior, requested, operation.transactionvalue);
	const base = {
		customid,
		refundid,
		transactionvalue: operation.transactionvalue === null ? null : fromHundredths(operation.transactionvalue),
	};
	if (decision.kind === "exceeds") {
		throw new Refused({
			code: "refund_exceeds_transaction",
			transactionvalue: fromHundredths(decision.transactionvalue),
			refunded: fromHundredths(decision.refunded),
			message: `refunds would exceed the transaction value ${fromHundredths(decision.transactionvalue)} (already refunded: ${fromHundredths(decision.refunded)})`,
		});
	}
	if (decision.kind === "noop") {
		return {
			rewards: [],
			reversal: { ...base, refundvalue: 0, refunded: fromHundredths(prior.refunded), full: prior.full, changed: false, rewards: [] },
		};
	}
	// A milestone reward is not the event's own: it is reversed below only when its friends fall below N.
	const seqs = eventRewards(tx.sql, customid, operation.friendUserkey).filter((r) => !isMilestoneKey(r.key));
	const changed: RewardRow[] = [];
	const reported: ReversedReward[] = [];
	for (const { seq } of seqs) {
		// Read each one now: paying off the debt of an earlier one may have used this one's credit.
		const row = rewardRow(tx.sql, seq)!;
		assertUnlocked(tx.sql, tx.userkey, row.seq, ownTxid);
		const target = reversedTarget(
			{ amount: row.amount, reversed: row.reversed, percent: row.percent === 1 },
			{
				full: decision.full,
				refunded: decision.refunded,
				transactionvalue: operation.transactionvalue,
			},
		);
		if (target <= row.reversed) continue;
		const done = reverseReward(tx, row, target, { customid, refundid, reason: operation.reason });
		changed.push(done.after);
		reported.push(done.reported);
	}
	if (decision.full) {
		// Milestones (docs/rewards.md): the event's friend stops counting; a milestone paid but no longer reached is
		// reversed whole like any reward (its redeemed part becomes a clawback).
		for (const ruleid of reverseMilestoneEvents(tx, customid)) {
			const paid = milestoneReward(tx.sql, ruleid);
			if (!paid || paid.reversed >= paid.amount) continue;
			assertUnlocked(tx.sql, tx.userkey, paid.seq, ownTxid);
			const done = reverseReward(tx, paid, paid.amount, { customid, refundid, reason: operation.reason });
			changed.push(done.after);
			reported.push(done.reported);
		}
	}
	// Debts are paid by what is left, and what is left of a partly reversed reward may pay older debts.
	const keys = new Map(changed.map((row) => [JSON.stringify(keyOf(row)), keyOf(row)]));
	for (const key of keys.values()) settleOwed(tx, key, ownTxid);
	const outcome: ReversalOutcome = {
		...base,
		refundvalue: fromHundredths(decision.refundvalue),
		refunded: fromHundredths(decision.refunded),
		full: decision.full,
		changed: true,
		rewards: reported,
	};
	tx.sql.exec(
		`INSERT INTO refunds (customid, refundid, requested, refundvalue, refunded, transactionvalue, full, reason, outcome, created_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		customid,
		refundid,
		operation.refundvalue,
		decision.refundvalue,
		decision.refunded,
		operation.transactionvalue,
		decision.full ? 1 : 0,
		operation.reason,
		JSON.stringify(outcome),
		new Date(tx.nowMs).toISOString(),
	);
	return { rewards: changed.map((row) => toLedgerReward(tx.userkey, row)), reversal: outcome };
}

/**
 * A reward granted for an event this ledger already refunded (a late retry
 * of registerconversionevent completing a missing reward) is born reversed
 * as far as those refunds go, so a refund can never be dodged by timing.
 */
export function applyRecordedRefunds(tx: TxContext, row: RewardRow): RewardRow {
	// `row` is as stored (insertReward reads it again when its insert paid off a debt).
	const prior = priorRefunds(tx.sql, row.customid);
	if (!prior.last) return row;
	const target = reversedTarget(
		{ amount: row.amount, reversed: row.reversed, percent: row.percent === 1 },
		{ full: prior.full, refunded: prior.refunded, transactionvalue: prior.transactionvalue },
	);
	if (target <= row.reversed) return row;
	const last = prior.last;
	const { after } = reverseReward(tx, row, target, { customid: row.customid, refundid: last.refundid, reason: last.reason });
	return asStored(tx, after, settleOwed(tx, keyOf(after)));
}
