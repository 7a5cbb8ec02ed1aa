import { z } from "zod";
import { rewardId } from "../domain/ledger-ids";
import { NEXT_OUTBOX_ID } from "./outbox-entries";
import type { LedgerOutboxEntry, PayoutRow, PayoutState, RewardRow } from "./schema";
import { readLedgerJson } from "./stored-json";
import type { TxContext } from "./transaction-types";

/**
 * The ledger owns every payout of its Stripe rewards (docs/stripe.md,
 * issues 31 and 47). A payout is a record of this ledger, never only a queue
 * message: one credit (amount > 0) or debit (amount < 0) of the reward,
 * numbered `n` per reward, which names its Idempotency-Key (its id, also
 * written into the balance transaction's metadata as `payoutid`) for life.
 *
 *   due ──claim──> sending ──Stripe 2xx──> paid
 *    │               ├──────Stripe 4xx──> failed (error code + request id)
 *    │               └──no answer within the key's lifetime──> unknown ──resolver──> paid | void
 *    └── amended while still due (never sent: its key never left) or cancelled at 0
 *
 * The claim (`sending`) is written in the ledger transaction before the call
 * leaves and freezes the amount and the customer: a retry, a redelivered
 * message or the scheduled re-drive sends the same key with the same amount
 * to the same customer, so Stripe answers it with the first answer. A
 * reward's payouts leave one at a time, in order: a due payout waits while
 * an earlier one is sending or unknown, so a debit booked while its credit
 * is in flight is only sent once Stripe's answer says the credit landed (and
 * is amended or cancelled, never sent, when it did not).
 *
 * What a reward owes its user is its worth after refunds while it is
 * Approved or Rewarded, and 0 once it is Rejected (other statuses hold what
 * was booked). The reconcile (reconcileReward) books the difference between
 * what is owed and what is booked (due + sending + paid) as a new record
 * under a new key, exactly once, since the new record is itself booked. It
 * is called explicitly, only where what a reward owes or what its payouts
 * booked changes, never by a reward write as such (a comment books nothing):
 *
 *   - mutations.ts insertReward: a reward granted Approved;
 *   - status-changes.ts applyStatusChanges, approveEndedHolds: a status change;
 *   - reversal.ts reverseReward: a refund's reversal;
 *   - dispute-holds.ts release: a won dispute restores a held reward's status;
 *   - payout-outcome.ts retryDuePayouts, redrivePayouts (force: an operator's
 *     retry, a new paymentcustomerid; legacy `pending` rewards);
 *   - payout-resolution.ts resolvePayout: Stripe's record of an unknown payout.
 *
 * Stripe's answers book nothing: a paid record lets the reward's next due
 * record leave (queueDuePayouts); a failed one cancels the due records
 * behind it (payout-outcome.ts failPayout).
 *
 * A `failed` record books nothing and stops reconciling until an operator's
 * retry (or a new paymentcustomerid) asks again; an `unknown` one stops
 * every booking of its reward, retry included, until the resolver read
 * Stripe's record of it: `paid` (it landed) or `void` (Stripe never applied
 * it, books nothing).
 */

export const payoutMessageSchema = z.object({
	payout: z.union([
		z.object({ appid: z.string(), userkey: z.string(), seq: z.number().int(), n: z.number().int() }),
		// A message queued before the payout records (schema step 7): the ledger reconciles the reward instead.
		z.object({ appid: z.string(), userkey: z.string(), seq: z.number().int(), kind: z.enum(["credit", "debit"]) }),
	]),
});
export type PayoutMessage = z.output<typeof payoutMessageSchema>;
const entrySchema = z.object({ seq: z.number().int(), n: z.number().int() });

/** The Idempotency-Key of payout `n` of a reward: the first keeps the key of the service's first payouts. */
export const payoutKey = (appid: string, rewarddtlid: string, n: number) =>
	n === 1 ? `payout-${appid}-${rewarddtlid}` : `payout-${appid}-${rewarddtlid}-${n}`;

/** What a Stripe reward owes its user now (hundredths), or null: a status that holds what was booked. */
export function owedOf(row: Pick<RewardRow, "status" | "amount" | "reversed">): number | null {
	if (row.status === "Rejected") return 0;
	if (row.status === "Approved" || row.status === "Rewarded") return Math.max(0, row.amount - row.reversed);
	return null;
}

export const BOOKED = ["due", "sending", "paid"] as const;

export function payoutsOf(sql: SqlStorage, seq: number): PayoutRow[] {
	return sql.exec<PayoutRow>("SELECT * FROM payouts WHERE seq = ? ORDER BY n", seq).toArray();
}

export function payoutRow(sql: SqlStorage, seq: number, n: number): PayoutRow | undefined {
	return sql.exec<PayoutRow>("SELECT * FROM payouts WHERE seq = ? AND n = ?", seq, n).toArray()[0];
}

export const bookedOf = (rows: PayoutRow[]) =>
	rows.filter((r) => (BOOKED as readonly string[]).includes(r.state)).reduce((sum, r) => sum + r.amount, 0);

/** Where the reward's payouts stand, for the reward row and its projection. */
export function payoutStateOf(rows: PayoutRow[]): PayoutState | null {
	if (rows.some((r) => r.state === "unknown")) return "unknown";
	if (rows.some((r) => r.state === "sending")) return "sending";
	if (rows.some((r) => r.state === "due")) return "due";
	const last = rows.filter((r) => r.state !== "cancelled" && r.state !== "void").at(-1);
	if (!last) return null;
	if (last.state === "failed") return last.error_code === "no_customer" ? "waiting_customer" : "failed";
	return "paid";
}

/** Puts payout `n` in the outbox now (or makes its waiting entry due now): the flush hands it to the Stripe queue. */
export function queuePayout(ctx: TxContext, seq: number, n: number): void {
	ctx.sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'payout', ?, ?, ?, ?)
		 ON CONFLICT (ref) DO UPDATE SET next_attempt_at = excluded.next_attempt_at`,
		`payout:${seq}:${n}`,
		JSON.stringify({ seq, n }),
		ctx.nowMs,
		new Date(ctx.nowMs).toISOString(),
	);
}

/** True while payout `n` must wait: an earlier payout of its reward is in flight or its outcome is unknown. */
export const waitsForEarlier = (rows: PayoutRow[], n: number) =>
	rows.some((r) => r.n < n && (r.state === "sending" || r.state === "unknown"));

/** Queues the reward's due payouts again (an earlier one settled, so the next may leave). */
export function queueDuePayouts(ctx: TxContext, seq: number): void {
	for (const row of payoutsOf(ctx.sql, seq)) if (row.state === "due") queuePayout(ctx, seq, row.n);
}

/**
 * Books the difference between what the reward owes and what its payouts
 * booked, inside the change's transaction. `force`: also after a failed
 * payout (an operator's retry, a new paymentcustomerid); never while a
 * payout's outcome is unknown. Answers the reward's payout state after it
 * (unchanged for a reward that is not Stripe's).
 */
export function reconcilePayouts(ctx: TxContext, row: RewardRow, force = false): Partial<RewardRow> {
	if (row.rewardtype !== "Stripe") return {};
	const owed = owedOf(row);
	const rows = payoutsOf(ctx.sql, row.seq);
	const last = rows.at(-1);
	// An unknown outcome may have paid what a new record would pay again (issue 47): nothing is booked until it is resolved.
	const unknown = rows.some((r) => r.state === "unknown");
	const blocked = unknown || (!force && rows.filter((r) => r.state !== "cancelled").at(-1)?.state === "failed");
	const diff = owed === null || blocked ? 0 : owed - bookedOf(rows);
	if (diff !== 0) {
		if (last?.state === "due") {
			// Never sent (a claim would have made it `sending`): its key has not left, so its amount may still change.
			const amount = last.amount + diff;
			ctx.sql.exec(
				"UPDATE payouts SET amount = ?, state = ?, updated_at = ? WHERE seq = ? AND n = ?",
				amount,
				amount === 0 ? "cancelled" : "due",
				ctx.nowMs,
				row.seq,
				last.n,
			);
		} else {
			const n = (last?.n ?? 0) + 1;
			ctx.sql.exec("INSERT INTO payouts (seq, n, amount, state, updated_at) VALUES (?, ?, ?, 'due', ?)", row.seq, n, diff, ctx.nowMs);
			queuePayout(ctx, row.seq, n);
		}
	}
	return payoutStatePatch(ctx, row);
}

/** The reward's payout state as its records say now, as a patch (empty when unchanged): for writes that book nothing. */
export function payoutStatePatch(ctx: TxContext, row: RewardRow): Partial<RewardRow> {
	if (row.rewardtype !== "Stripe") return {};
	const state = payoutStateOf(payoutsOf(ctx.sql, row.seq));
	return state === row.payout_state ? {} : { payout_state: state };
}

/**
 * An Approved Stripe reward whose records paid what it owes (nothing due,
 * sending or failed: reconcilePayouts found no difference) is Rewarded, as
 * when Stripe's answer comes while it is Approved (payout-outcome.ts). So a
 * reward paid while under review and approved afterwards does not stay
 * Approved, paid, with a balance that says nothing was paid (issue 31).
 */
export const paidInFull = (row: RewardRow) =>
	row.rewardtype === "Stripe" && row.status === "Approved" && row.payout_state === "paid" && row.amount - row.reversed > 0;

/**
 * The reconcile of a change of what `changed` (the reward as the change
 * leaves it) owes: books the difference (reconcilePayouts) and answers the
 * patch that goes with it, its payout state and, paid in full, Rewarded.
 * One of the call sites named in this module's header.
 */
export function reconcileReward(ctx: TxContext, changed: RewardRow, force = false): Partial<RewardRow> {
	const booked = reconcilePayouts(ctx, changed, force);
	return paidInFull({ ...changed, ...booked })
		? { ...booked, status: "Rewarded", rewarded_at: new Date(ctx.nowMs).toISOString(), hold_until: null }
		: booked;
}

/** The outbox entries of payouts, as queue messages of the Stripe queue. */
export function payoutMessages(appid: string, userkey: string, entries: LedgerOutboxEntry[]): PayoutMessage[] {
	return entries.map((entry) => ({ payout: { appid, userkey, ...readLedgerJson("outbox", "payload", entry.payload, entrySchema) } }));
}

/** What the consumer sends for a claimed payout (amount in hundredths; > 0 a credit to the customer). */
export interface PayoutOrder {
	key: string;
	rewarddtlid: string;
	customer: string;
	amount: number;
	rewardunit: string;
	description: string;
}

export function orderOf(ctx: TxContext, reward: RewardRow, payout: PayoutRow): PayoutOrder {
	const rewarddtlid = rewardId(ctx.userkey, reward.seq);
	return {
		key: payoutKey(ctx.appid, rewarddtlid, payout.n),
		rewarddtlid,
		customer: payout.customer ?? "",
		amount: payout.amount,
		rewardunit: reward.rewardunit,
		description:
			payout.n === 1 && payout.amount > 0
				? `Referral reward ${rewarddtlid} (${reward.campaignname}, ${reward.eventname})`
				: `Adjustment ${payout.n} of referral reward ${rewarddtlid}`,
	};
}
