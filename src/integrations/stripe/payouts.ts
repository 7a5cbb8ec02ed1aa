import Stripe from "stripe";
import { paymentCustomerOf } from "../../db/stripe";
import { hundredthsToMinor } from "../../domain/currency";
import type { PayoutMessage } from "../../ledger/payouts";
import { ledgerFor } from "../../ledger/stub";
import { stripeConnection } from "./connection";
import { paced, rateLimited, verdictOf } from "./pace";
import { lookUpPayout } from "./payout-resolver";

/**
 * Sends one payout record of a reward's ledger to Stripe (docs/stripe.md):
 * a customer balance transaction, negative for a credit (Stripe takes it
 * off the customer's next invoices), positive for a debit. The ledger owns
 * the record (ledger/payouts.ts): it is claimed (`sending`, amount and
 * customer frozen) in a ledger transaction before the call leaves, so the
 * same Idempotency-Key always goes out with the same amount, and Stripe's
 * answer is written back to it. What may pass later (network, timeout, 5xx,
 * 429, 409 in progress) is retried with the same key; a 4xx is recorded
 * with Stripe's error code and request id (Stripe's `Stripe-Should-Retry`
 * header decides first: pace.ts verdictOf). Every request waits for its
 * moment from the account's governor (governor.ts), and a 429 slows it
 * down. A payout whose outcome is unknown
 * (ledger/payout-resolution.ts) is looked up in the customer's balance
 * transactions instead of sent (payout-resolver.ts).
 */
/** What the consumer does with the message: done, tried again with backoff, or sent again after `defer` ms (not a failure). */
export type Settle = "ack" | "retry" | { defer: number };

const log = (msg: string, fields: Record<string, unknown>) => console.warn(JSON.stringify({ msg, ...fields }));

export async function runPayout(env: Env, work: PayoutMessage["payout"]): Promise<Settle> {
	const { appid, userkey, seq } = work;
	const ledger = ledgerFor(env, appid, userkey);
	if (!("n" in work)) {
		// A message from before the payout records: the ledger books what the reward owes under a record of its own.
		const retried = await ledger.retryPayouts();
		return retried.ok ? "ack" : "retry";
	}
	const [connection, customer] = await Promise.all([stripeConnection(env, appid), paymentCustomerOf(env.DB, appid, userkey)]);
	const claimed = await ledger.claimPayout(seq, work.n, customer, connection !== null);
	if (!claimed.ok) return "retry";
	const { claim } = claimed;
	if ("settled" in claim) return "ack";
	if ("later" in claim || !connection) return "retry";
	// Each request to Stripe waits for its moment from the account's governor (pace.ts); a long queue comes back later.
	const pace = async () => {
		const slot = await paced(env, connection);
		if ("deferMs" in slot) throw new Deferred(slot.deferMs);
	};
	if ("resolve" in claim) {
		try {
			const outcome = await lookUpPayout(connection.stripe, claim.resolve, pace);
			const resolved = await ledger.resolvePayout(seq, work.n, outcome);
			return resolved.ok ? "ack" : "retry";
		} catch (error) {
			if (error instanceof Deferred) return { defer: error.ms };
			if (verdictOf(error) === "retry" && isRateLimited(error)) await rateLimited(env, connection);
			log("stripe: unknown payout not looked up, tried again", { appid, key: claim.resolve.key, error: String(error) });
			return "retry";
		}
	}
	const order = claim.send;
	const currency = order.rewardunit.toLowerCase();
	const minor = hundredthsToMinor(order.amount, currency);
	try {
		await pace();
		const transaction = await connection.stripe.customers.createBalanceTransaction(
			order.customer,
			{
				amount: -minor,
				currency,
				description: order.description,
				// `payoutid` names the payout, so an unknown outcome can be looked up (payout-resolver.ts).
				metadata: {
					rewarddtlid: order.rewarddtlid,
					kind: order.amount > 0 ? "reward" : "clawback",
					payout: String(work.n),
					payoutid: order.key,
				},
			},
			{ idempotencyKey: order.key },
		);
		const paid = await ledger.payoutPaid(seq, work.n, transaction.id, transaction.lastResponse?.requestId ?? null);
		return paid.ok ? "ack" : "retry";
	} catch (error) {
		// Claimed, not sent: the redelivered message claims it again and sends it with its key.
		if (error instanceof Deferred) return { defer: error.ms };
		const verdict = verdictOf(error);
		// The key was first used with other parameters (a send from before a change of what is sent), or Stripe says a
		// server error is final: what the first request did is unknown, so it is looked up rather than recorded as refused.
		if (verdict === "unknown" || (verdict === "refused" && error instanceof Stripe.errors.StripeIdempotencyError)) {
			const unknown = await ledger.payoutUnknown(seq, work.n);
			return unknown.ok ? "ack" : "retry";
		}
		if (verdict === "refused" && error instanceof Stripe.errors.StripeError) {
			const code = error.code ?? error.type ?? `http_${error.statusCode}`;
			const refused = await ledger.payoutRefused(seq, work.n, { code, requestId: error.requestId ?? null });
			return refused.ok ? "ack" : "retry";
		}
		if (isRateLimited(error)) await rateLimited(env, connection);
		const status = error instanceof Stripe.errors.StripeError ? error.statusCode : undefined;
		log("stripe: payout not answered, retried under the same key", { appid, key: order.key, status, error: String(error) });
		return "retry";
	}
}

/** The governor's queue is longer than a request waits: the work comes back after `ms`. */
class Deferred extends Error {
	constructor(readonly ms: number) {
		super(`deferred ${ms} ms by the Stripe governor`);
	}
}

const isRateLimited = (error: unknown) => error instanceof Stripe.errors.StripeError && error.statusCode === 429;
