import { z } from "zod";
import { rewardId } from "../domain/ledger-ids";
import type { TxContext } from "./mutations";
import type { LedgerOutboxEntry, PayoutState, RewardRow } from "./schema";
import { readLedgerJson } from "./stored-json";

/**
 * Stripe payouts of rewards (docs/stripe.md). A reward of a `Stripe`
 * campaign is paid once it is Approved: the change that approves it writes a
 * `payout` outbox entry in its own transaction; the flush hands the entry to
 * the Stripe queue (never the request path), whose consumer
 * (integrations/stripe/payouts.ts) credits the customer's Stripe balance under
 * an Idempotency-Key fixed per reward, then tells this ledger the outcome
 * (`recordPayout`). A refund of a paid reward queues a debit of the refunded
 * part the same way, keyed by the reward and its running refunded total.
 */

export const payoutMessageSchema = z.object({
	payout: z.object({
		appid: z.string(),
		userkey: z.string(),
		seq: z.number().int(),
		kind: z.enum(["credit", "debit"]),
		/** A debit's amount in hundredths (the refunded part), and the reward's refunded total it brings it to. */
		amount: z.number().int().optional(),
		reversedTotal: z.number().int().optional(),
	}),
});
export type PayoutMessage = z.output<typeof payoutMessageSchema>;
type PayoutEntry = Omit<PayoutMessage["payout"], "appid" | "userkey">;

const isDue = (row: Pick<RewardRow, "rewardtype" | "status" | "payoutid">) =>
	row.rewardtype === "Stripe" && row.status === "Approved" && row.payoutid === null;

function queuePayout(ctx: TxContext, ref: string, entry: PayoutEntry): void {
	ctx.sql.exec(
		"INSERT INTO outbox (kind, ref, payload, next_attempt_at, created_at) VALUES ('payout', ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING",
		ref,
		JSON.stringify(entry),
		ctx.nowMs,
		new Date(ctx.nowMs).toISOString(),
	);
}

const creditRef = (seq: number) => `payout:${seq}`;

/** A new reward: an approved Stripe reward starts its payout. Answers the row as stored. */
export function startPayout(ctx: TxContext, row: RewardRow): RewardRow {
	if (!isDue(row)) return row;
	queuePayout(ctx, creditRef(row.seq), { seq: row.seq, kind: "credit" });
	ctx.sql.exec("UPDATE rewards SET payout_state = 'pending' WHERE seq = ?", row.seq);
	return { ...row, payout_state: "pending" };
}

/**
 * What a change of a Stripe reward means for its payout, inside the change's
 * transaction: becoming approved (unpaid) queues the credit; a refund of a
 * paid reward queues the debit of the part it took back.
 */
export function payoutTransition(ctx: TxContext, before: RewardRow, after: RewardRow): Partial<RewardRow> {
	if (after.rewardtype !== "Stripe") return {};
	if (isDue(after) && !isDue(before)) {
		queuePayout(ctx, creditRef(after.seq), { seq: after.seq, kind: "credit" });
		return { payout_state: "pending" };
	}
	if (after.payoutid !== null && after.reversed > before.reversed) {
		const entry = { seq: after.seq, kind: "debit" as const, amount: after.reversed - before.reversed, reversedTotal: after.reversed };
		queuePayout(ctx, `payout_debit:${after.seq}:${after.reversed}`, entry);
	}
	return {};
}

/** Queues the credit of every approved Stripe reward still unpaid (a new paymentcustomerid, a retry); how many. */
export function requeueDuePayouts(ctx: TxContext): number {
	const due = ctx.sql
		.exec<{ seq: number }>(
			"SELECT seq FROM rewards WHERE status = 'Approved' AND rewardtype = 'Stripe' AND payoutid IS NULL ORDER BY seq LIMIT 500",
		)
		.toArray();
	for (const { seq } of due) {
		// A credit already waiting in the outbox is made due now rather than queued twice.
		ctx.sql.exec("DELETE FROM outbox WHERE ref = ?", creditRef(seq));
		queuePayout(ctx, creditRef(seq), { seq, kind: "credit" });
	}
	return due.length;
}

/** What the consumer needs to pay a reward: its state, its worth in hundredths, its currency. */
export interface PayoutOrder {
	rewarddtlid: string;
	status: RewardRow["status"];
	rewardtype: RewardRow["rewardtype"];
	payoutid: string | null;
	payoutState: PayoutState | null;
	/** What the reward is worth now (amount minus refunds), in hundredths. */
	worth: number;
	rewardunit: string;
	campaignname: string;
	eventname: string;
}

export function payoutOrderOf(userkey: string, row: RewardRow): PayoutOrder {
	return {
		rewarddtlid: rewardId(userkey, row.seq),
		status: row.status,
		rewardtype: row.rewardtype,
		payoutid: row.payoutid,
		payoutState: row.payout_state,
		worth: row.amount - row.reversed,
		rewardunit: row.rewardunit,
		campaignname: row.campaignname,
		eventname: row.eventname,
	};
}

const entrySchema = payoutMessageSchema.shape.payout.omit({ appid: true, userkey: true });

/** The outbox entries of payouts, as queue messages of the Stripe queue. */
export function payoutMessages(appid: string, userkey: string, entries: LedgerOutboxEntry[]): PayoutMessage[] {
	return entries.map((entry) => ({ payout: { appid, userkey, ...readLedgerJson("outbox", "payload", entry.payload, entrySchema) } }));
}
