import { isCurrencyCode } from "../domain/currency";
import { rewardRow, updateReward } from "./mutations";
import { lookupOf, markUnknown, type PayoutLookup, requeueUnknown } from "./payout-resolution";
import {
	orderOf,
	type PayoutOrder,
	payoutRow,
	payoutStatePatch,
	payoutsOf,
	queueDuePayouts,
	queuePayout,
	reconcileReward,
	waitsForEarlier,
} from "./payouts";
import type { PayoutRow, RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";

/**
 * The steps of a payout record's life that the Stripe consumer drives
 * (integrations/stripe/payouts.ts), each one ledger transaction (payouts.ts
 * has the state machine). Repeats (a redelivered message, the re-drive)
 * change nothing twice: a settled record answers `settled`.
 */

export const WAITING_COMMENT = "Waiting for a paymentcustomerid: paid into Stripe as soon as updateuser sets one.";

/** Why a payout was not sent or Stripe refused it: a code and Stripe's request id, never Stripe's text (it names customers). */
export interface PayoutFailure {
	code: string;
	requestId?: string | null;
}

export type PayoutClaim =
	/** Nothing to send: paid, failed, cancelled, or no such record. */
	| { settled: true }
	/** Sent before and the app is no longer connected: keep it `sending`, try again later. */
	| { later: true }
	| { send: PayoutOrder }
	/** Its outcome is unknown: read the customer's balance transactions and resolve it (payout-resolution.ts). */
	| { resolve: PayoutLookup };

const reasonOf = (f: PayoutFailure) => {
	const request = f.requestId ? `, request ${f.requestId}` : "";
	if (f.code === "not_connected") return "Stripe is not connected to this app: connect it, then retry the payout.";
	if (f.code === "invalid_currency") return "The reward's unit is not a currency Stripe can pay.";
	return `Stripe refused the payout (${f.code}${request}): fix it in Stripe, then retry.`;
};

/**
 * Marks payout `n` of reward `seq` as sending before the consumer calls
 * Stripe, freezing the customer the first time; answers what to send.
 * A payout still due that cannot leave (no customer, app not connected, a
 * unit that is not a currency) fails without being sent.
 */
export function claimPayout(tx: TxContext, seq: number, n: number, customer: string | null, connected: boolean): PayoutClaim {
	const payout = payoutRow(tx.sql, seq, n);
	const reward = rewardRow(tx.sql, seq);
	if (payout?.state === "unknown" && reward) {
		if (!connected) return { later: true };
		tx.sql.exec("UPDATE payouts SET updated_at = ? WHERE seq = ? AND n = ?", tx.nowMs, seq, n);
		return { resolve: lookupOf(tx, reward, payout) };
	}
	if (!payout || !reward || (payout.state !== "due" && payout.state !== "sending")) return { settled: true };
	// One payout of a reward at a time (payouts.ts): this one is queued again when the earlier one settles.
	if (payout.state === "due" && waitsForEarlier(payoutsOf(tx.sql, seq), n)) return { settled: true };
	if (payout.state === "due") {
		const failure = !connected
			? "not_connected"
			: !isCurrencyCode(reward.rewardunit)
				? "invalid_currency"
				: !customer
					? "no_customer"
					: null;
		if (failure) {
			failPayout(tx, reward, payout, { code: failure });
			return { settled: true };
		}
		tx.sql.exec(
			"UPDATE payouts SET state = 'sending', customer = ?, sent_at = ?, attempts = attempts + 1, updated_at = ? WHERE seq = ? AND n = ?",
			customer,
			tx.nowMs,
			tx.nowMs,
			seq,
			n,
		);
	} else {
		if (!connected) return { later: true };
		tx.sql.exec("UPDATE payouts SET attempts = attempts + 1, updated_at = ? WHERE seq = ? AND n = ?", tx.nowMs, seq, n);
	}
	const claimed = payoutRow(tx.sql, seq, n) ?? payout;
	if (reward.payout_state !== "sending") updateReward(tx, reward, payoutStatePatch(tx, reward));
	return { send: orderOf(tx, reward, claimed) };
}

/** Stripe created the balance transaction `stripeId`: the record is paid; a reward paid what it owes becomes Rewarded. */
export function payoutPaid(tx: TxContext, seq: number, n: number, stripeId: string, requestId: string | null): boolean {
	const payout = payoutRow(tx.sql, seq, n);
	const reward = rewardRow(tx.sql, seq);
	if (!payout || !reward || payout.state !== "sending") return false;
	tx.sql.exec(
		"UPDATE payouts SET state = 'paid', stripe_id = ?, request_id = ?, updated_at = ? WHERE seq = ? AND n = ?",
		stripeId,
		requestId,
		tx.nowMs,
		seq,
		n,
	);
	// The reward's next payout (booked while this one was in flight) may leave now.
	queueDuePayouts(tx, seq);
	const open = payoutsOf(tx.sql, seq).some((r) => r.state === "due" || r.state === "sending" || r.state === "unknown");
	// Paid is paid: the id of the first credit is kept whatever the reward's status did meanwhile.
	const rewarded = reward.status === "Approved" && !open && reward.amount - reward.reversed > 0;
	updateReward(
		tx,
		reward,
		{
			...payoutStatePatch(tx, reward),
			payoutid: reward.payoutid ?? (payout.amount > 0 ? stripeId : null),
			...(rewarded ? { status: "Rewarded" as const, rewarded_at: new Date(tx.nowMs).toISOString(), hold_until: null } : {}),
			...(reward.payout_state === "waiting_customer" || reward.payout_state === "failed" ? { comment: null } : {}),
		},
		rewarded ? { type: "reward.status_changed", extra: { previousstatus: reward.status } } : undefined,
	);
	return true;
}

/** Stripe refused payout `n` (a 4xx): failed, with the code and request id as the reward's comment and a webhook. */
export function payoutRefused(tx: TxContext, seq: number, n: number, failure: PayoutFailure): boolean {
	const payout = payoutRow(tx.sql, seq, n);
	const reward = rewardRow(tx.sql, seq);
	if (!payout || !reward || (payout.state !== "sending" && payout.state !== "due")) return false;
	failPayout(tx, reward, payout, failure);
	return true;
}

/**
 * A failed payout books nothing; the payouts booked after it that never left
 * (waiting for it, payouts.ts) are cancelled with it, so nothing leaves for
 * this reward until a retry books again what it owes. Books nothing itself.
 */
function failPayout(tx: TxContext, reward: RewardRow, payout: PayoutRow, failure: PayoutFailure): void {
	tx.sql.exec(
		"UPDATE payouts SET state = 'failed', error_code = ?, request_id = ?, updated_at = ? WHERE seq = ? AND n = ?",
		failure.code,
		failure.requestId ?? null,
		tx.nowMs,
		payout.seq,
		payout.n,
	);
	tx.sql.exec(
		"UPDATE payouts SET state = 'cancelled', updated_at = ? WHERE seq = ? AND n > ? AND state = 'due'",
		tx.nowMs,
		payout.seq,
		payout.n,
	);
	const state = payoutStatePatch(tx, reward);
	if (failure.code === "no_customer") {
		updateReward(tx, reward, { ...state, comment: WAITING_COMMENT });
		return;
	}
	const reason = reasonOf(failure);
	updateReward(tx, reward, { ...state, comment: reason }, { type: "reward.payout_failed", extra: { reason, code: failure.code } });
}

/**
 * An operator's retry or a new paymentcustomerid: books again what each
 * Stripe reward owes (also after a failure: one of the reconcile's call
 * sites, payouts.ts). A reward whose payout is unknown books nothing: its
 * payout is looked up in Stripe again instead (payout-resolution.ts).
 */
export function retryDuePayouts(tx: TxContext): { queued: number } {
	const rows = tx.sql
		.exec<RewardRow>(
			"SELECT * FROM rewards WHERE rewardtype = 'Stripe' AND payout_state IN ('failed', 'waiting_customer', 'pending', 'unknown') ORDER BY seq LIMIT 500",
		)
		.toArray();
	let queued = 0;
	for (const row of rows) {
		if (row.payout_state === "unknown") {
			requeueUnknown(tx, row.seq, 0);
			continue;
		}
		// Failed as `unknown_outcome` before issue 47: looked up in Stripe, never booked over.
		const legacy = payoutsOf(tx.sql, row.seq).find((p) => p.state === "failed" && p.error_code === "unknown_outcome");
		if (legacy) {
			markUnknown(tx, row, legacy);
			continue;
		}
		const before = payoutsOf(tx.sql, row.seq).length;
		updateReward(tx, row, { ...reconcileReward(tx, row, true), ...(row.comment === WAITING_COMMENT ? { comment: null } : {}) });
		if (payoutsOf(tx.sql, row.seq).length > before) queued++;
	}
	return { queued };
}

/** Stripe keeps an Idempotency-Key 24 hours; a payout sent longer ago than this can no longer be resent safely. */
export const KEY_LIFETIME_MS = 23 * 3_600_000;

/**
 * The scheduled job's re-drive (docs/stripe.md, "Stuck payouts"): payouts
 * due or sending untouched for `staleMs` go back to the queue with their
 * frozen key and amount; one first sent longer ago than Stripe keeps a key
 * (`keyLifetimeMs`) becomes `unknown` (resending could pay twice) and is
 * looked up in Stripe instead, as are unknown payouts untouched for
 * `staleMs` (payout-resolution.ts). Rewards queued before the payout records
 * (`pending`) are reconciled.
 */
export function redrivePayouts(tx: TxContext, staleMs: number, keyLifetimeMs = KEY_LIFETIME_MS): { redriven: number; failed: number } {
	const stale = tx.sql
		.exec<PayoutRow>(
			"SELECT * FROM payouts WHERE state IN ('due', 'sending') AND updated_at <= ? ORDER BY updated_at LIMIT 100",
			tx.nowMs - staleMs,
		)
		.toArray();
	let redriven = 0;
	let failed = 0;
	for (const payout of stale) {
		const reward = rewardRow(tx.sql, payout.seq);
		if (!reward) continue;
		if (payout.state === "sending" && payout.sent_at !== null && payout.sent_at > 0 && payout.sent_at <= tx.nowMs - keyLifetimeMs) {
			markUnknown(tx, reward, payout);
			failed++;
			continue;
		}
		tx.sql.exec("UPDATE payouts SET updated_at = ? WHERE seq = ? AND n = ?", tx.nowMs, payout.seq, payout.n);
		queuePayout(tx, payout.seq, payout.n);
		redriven++;
	}
	const unknown = tx.sql
		.exec<{ seq: number }>("SELECT seq FROM rewards WHERE rewardtype = 'Stripe' AND payout_state = 'unknown' ORDER BY seq LIMIT 100")
		.toArray();
	for (const { seq } of unknown) redriven += requeueUnknown(tx, seq, staleMs);
	const legacy = tx.sql
		.exec<RewardRow>("SELECT * FROM rewards WHERE rewardtype = 'Stripe' AND payout_state = 'pending' ORDER BY seq LIMIT 100")
		.toArray();
	for (const row of legacy) updateReward(tx, row, reconcileReward(tx, row));
	return { redriven: redriven + legacy.length, failed };
}
