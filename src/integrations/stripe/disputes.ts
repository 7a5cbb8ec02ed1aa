import { type FoundLink, raiseRefunded } from "../../db/stripe";
import { type DisputeState, disputeState, recordDisputeState } from "../../db/stripe-disputes";
import { recordStripeCase } from "../../db/stripe-identity";
import { minorToUnits } from "../../domain/currency";
import { appKeyAudit } from "../../ledger/audit";
import type { DisputePhase } from "../../ledger/dispute-holds";
import { ledgerFor } from "../../ledger/stub";
import { eventParties, reverseConversion } from "../../operations/reversal-work";
import type { WorkContext } from "../../operations/work";
import type { StripeEventMessage } from "./events";
import { linkedPaymentOrWait } from "./payment-link";
import type { Settle } from "./payouts";

/**
 * Chargebacks (issue 47, docs/stripe.md "Disputes"): `charge.dispute.created`
 * holds the disputed payment's rewards (`UnderReview`, a payout not sent yet
 * waits; ledger/dispute-holds.ts); `charge.dispute.closed` lost reverses the
 * payment as a full refund (the reversal of reversal-work.ts: clawbacks, and
 * debits of what was paid into Stripe, as for a refund), won restores the
 * rewards. The dispute's state in D1 only moves forward (db/stripe-disputes.ts)
 * and every step is idempotent, so a close before its open, duplicates and
 * concurrent deliveries converge, exactly once.
 */

export const DISPUTE_TYPES = ["charge.dispute.created", "charge.dispute.closed"] as const;
export const isDisputeEvent = (type: string) => (DISPUTE_TYPES as readonly string[]).includes(type);

/**
 * What an event says of its dispute: created is `open`; closed is `lost` when
 * Stripe says so, else `won` (`won`, or `warning_closed`: an inquiry that
 * closed without becoming a chargeback; the payment stays).
 */
export function disputeStateOf(type: string, status: string | null | undefined): DisputeState {
	if (type === "charge.dispute.created") return "open";
	return status === "lost" ? "lost" : "won";
}

export async function runDispute(ctx: WorkContext, work: StripeEventMessage, finish: (outcome: string) => Promise<"ack">): Promise<Settle> {
	const { env, app } = ctx;
	const dispute = work.object;
	const link = await linkedPaymentOrWait(ctx, work, { charge: dispute.charge, payment_intent: dispute.payment_intent, invoice: null });
	if (!link) return "ack";
	const said = disputeStateOf(work.type, dispute.status);
	const state = await recordDisputeState(env.DB, app.appid, dispute.id, link.customid, said, Date.now());
	if ((await applyState(ctx, dispute.id, link, state)) === "retry") return "retry";
	if (state === "open") {
		// Closed while this hold was placed: the close's release may have run before the hold, so apply it again.
		const now = await disputeState(env.DB, app.appid, dispute.id);
		if (now && now !== "open" && (await applyState(ctx, dispute.id, link, now)) === "retry") return "retry";
	}
	const outcome = said === "open" && state !== "open" ? "dispute_opened_after_close" : `dispute_${said === "open" ? "opened" : state}`;
	if (outcome !== "dispute_opened_after_close") {
		const parties = await eventParties(env, app.appid, link.customid);
		const amount = dispute.amount ?? link.amount_minor;
		await recordStripeCase(env.DB, app.appid, {
			eventid: work.eventid,
			kind: outcome,
			customer: dispute.customer,
			userkey: parties?.referrerUserkey ?? parties?.friendUserkey ?? null,
			// The friend paid: erased, the case names neither the friend nor the customer.
			payer: parties?.friendUserkey ?? null,
			detail: `${dispute.id} on ${dispute.charge ?? dispute.payment_intent ?? "?"}, ${amount} ${link.currency.toUpperCase()} (minor units)`,
			at: Date.now(),
		});
	}
	return finish(outcome);
}

/** Brings the conversion's rewards in line with the dispute's state: held while open, reversed if lost, restored if won. */
async function applyState(ctx: WorkContext, dispute: string, link: FoundLink, state: DisputeState): Promise<Settle> {
	const { env, app } = ctx;
	if (state === "lost") {
		const outcome = await reverseConversion(ctx, {
			customid: link.customid,
			refundedTotal: minorToUnits(link.amount_minor, link.currency),
			// One refund per dispute: redeliveries and concurrent closes apply it once (ledger/reversal.ts).
			refundid: `stripe:dispute:${dispute}`,
			reason: `Stripe dispute ${dispute} lost: reversed as a full refund.`,
			audit: appKeyAudit(app.apikey),
		});
		if (outcome.kind === "retry_later") return "retry";
		if (outcome.kind !== "refused") await raiseRefunded(env.DB, app.appid, link.customid, link.amount_minor);
	}
	const phase: DisputePhase = state === "open" ? "hold" : state === "won" ? "restore" : "release";
	return inLedgers(ctx, link.customid, dispute, phase);
}

/** Runs the phase in the ledgers of the conversion's friend and referrer; a reward locked by another change is retried. */
async function inLedgers(ctx: WorkContext, customid: string, dispute: string, phase: DisputePhase): Promise<Settle> {
	const { env, app } = ctx;
	const parties = await eventParties(env, app.appid, customid);
	if (!parties) return "ack";
	const userkeys = [...new Set([parties.friendUserkey, parties.referrerUserkey].filter((k): k is string => k !== null))];
	// The same audit entry id for a phase of a dispute: a repeat that changes nothing writes nothing, and never twice.
	const audit = { ...appKeyAudit(app.apikey), entryid: `dispute_${app.appid}_${dispute}_${phase}` };
	// The event's user: each ledger seeks the event's rewards by it (every one names it as its friend; ledger schema step 17).
	const results = await Promise.all(
		userkeys.map((userkey) =>
			ledgerFor(env, app.appid, userkey).disputePhase(app.appid, userkey, {
				customid,
				friendUserkey: parties.friendUserkey,
				dispute,
				phase,
				audit,
			}),
		),
	);
	return results.some((r) => !r.ok && r.error.code === "reward_locked") ? "retry" : "ack";
}
