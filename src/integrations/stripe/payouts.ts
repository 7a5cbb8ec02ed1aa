import { paymentCustomerOf } from "../../db/stripe";
import { hundredthsToMinor, isCurrencyCode } from "../../domain/currency";
import type { PayoutMessage } from "../../ledger/payouts";
import { ledgerFor } from "../../ledger/stub";
import { refusedByStripe, stripeConnection } from "./connection";

/**
 * Pays a reward into Stripe (docs/stripe.md), from the Stripe queue: a
 * customer balance credit (a negative balance transaction, which Stripe
 * takes off the customer's next invoices) of what the reward is worth, under
 * an Idempotency-Key fixed per reward, so a retry or a redelivered message
 * never pays twice. A refund of a paid reward books the refunded part as a
 * debit (a positive balance transaction) under its own key.
 *
 * Answers "retry" for what may pass (network, 5xx, 429, 409 in progress);
 * everything else is recorded on the reward and acked.
 */
export type Settle = "ack" | "retry";

const log = (msg: string, fields: Record<string, unknown>) => console.warn(JSON.stringify({ msg, ...fields }));

export async function runPayout(env: Env, work: PayoutMessage["payout"]): Promise<Settle> {
	const { appid, userkey, seq } = work;
	const ledger = ledgerFor(env, appid, userkey);
	const order = await ledger.payoutOrder(seq);
	if (order?.rewardtype !== "Stripe") return "ack";
	if (work.kind === "credit" && (order.status !== "Approved" || order.payoutid)) return "ack";
	if (work.kind === "debit" && !order.payoutid) return "ack";
	const connection = await stripeConnection(env, appid);
	const failed = async (reason: string): Promise<Settle> => {
		if (work.kind === "credit") await ledger.recordPayout(seq, { failed: reason });
		else log("stripe: debit of a refunded reward refused", { appid, rewarddtlid: order.rewarddtlid, reason });
		return "ack";
	};
	if (!connection) return failed("Stripe is not connected to this app: connect it (PATCH /admin/v1/apps/{appid} with stripe), then retry.");
	if (!isCurrencyCode(order.rewardunit)) return failed(`The reward's unit ${order.rewardunit} is not a currency Stripe can pay.`);
	const customer = await paymentCustomerOf(env.DB, appid, userkey);
	if (!customer) {
		if (work.kind === "credit") await ledger.recordPayout(seq, { waiting: true });
		else log("stripe: debit of a refunded reward without a customer", { appid, rewarddtlid: order.rewarddtlid });
		return "ack";
	}
	const currency = order.rewardunit.toLowerCase();
	const credit = work.kind === "credit";
	const amount = hundredthsToMinor(credit ? order.worth : (work.amount ?? 0), currency);
	if (amount <= 0) return "ack";
	try {
		const transaction = await connection.stripe.customers.createBalanceTransaction(
			customer,
			{
				amount: credit ? -amount : amount,
				currency,
				description: credit
					? `Referral reward ${order.rewarddtlid} (${order.campaignname}, ${order.eventname})`
					: `Refund of referral reward ${order.rewarddtlid}`,
				metadata: { rewarddtlid: order.rewarddtlid, kind: credit ? "reward" : "clawback" },
			},
			{ idempotencyKey: credit ? `payout-${appid}-${order.rewarddtlid}` : `clawback-${appid}-${order.rewarddtlid}-${work.reversedTotal}` },
		);
		if (credit) await ledger.recordPayout(seq, { paid: transaction.id });
		return "ack";
	} catch (error) {
		if (refusedByStripe(error)) return failed(`Stripe refused the payout: ${error.message}`.slice(0, 500));
		log("stripe: payout failed, retried", { appid, rewarddtlid: order.rewarddtlid, error: String(error) });
		return "retry";
	}
}
