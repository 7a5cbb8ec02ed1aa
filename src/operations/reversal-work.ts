import { type CoordinatedResult, type CoordinationOptions, type LedgerPart, runAcrossLedgers } from "../coordination/ledger-transaction";
import { type EventParties, findEventParties, partiesOfClaimedEvent } from "../db/events";
import { allOf, appHasWebhook, insertOutboxEvent } from "../db/outbox-events";
import { customIdToken } from "../domain/ids";
import type { OutboxEvent } from "../domain/outbox-event";
import type { WorkOutcome } from "../domain/outcome";
import { ApiError, ledgerError } from "../http/errors";
import type { LedgerAudit } from "../ledger/audit";
import { eventGateFor } from "../ledger/event-gate";
import type { LedgerOperation, ReversalOutcome } from "../ledger/transaction-types";
import { sendOutboxEvents, webhookEvent } from "../outbox/events";
import { fromHundredths, toHundredths } from "../rewards/money";
import { failureOf, type WorkContext } from "./work";

/**
 * Reversing a conversion (docs/rewards.md, "Refunds and clawbacks"): the work
 * `reverseconversionevent` and the Stripe consumer share, answered as a typed
 * outcome (domain/outcome.ts). Registers no operation, so integration code
 * may import it.
 */

export interface ReverseRequest {
	customid: string;
	/** The refunded part in units, or undefined for the whole event (unless refundedTotal is given). */
	refundvalue?: number;
	/** What was refunded of the payment in total so far, in units (ledger/reversal.ts `refundedTotal`). */
	refundedTotal?: number;
	refundid: string;
	reason?: string;
	growthhack?: string;
	audit: LedgerAudit;
}

/** How often a refund meeting another change of the same rewards (reward_locked) is tried again before answering 409. */
const LOCKED_RETRIES = 8;

const eventNotFound = (customid: string) =>
	new ApiError(404, "event_not_found", `No conversion event with customid ${customid} in this app.`, { customid });

/** Runs the refund across the ledgers, trying again while another change holds the event's rewards. */
async function reverseAcrossLedgers(ctx: WorkContext, parts: LedgerPart[], options: CoordinationOptions): Promise<CoordinatedResult> {
	for (let attempt = 0; ; attempt++) {
		const result = await runAcrossLedgers(ctx.env, ctx.app.appid, parts, options);
		if (result.ok || result.error.code !== "reward_locked" || attempt >= LOCKED_RETRIES) return result;
		// Randomized so two refunds of one event that block each other in two ledgers do not meet again.
		await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** Math.min(attempt, 4) * (0.5 + Math.random())));
	}
}

async function eventIdOf(appid: string, customid: string, refundid: string): Promise<string> {
	// Refund ids may be long (an Idempotency-Key): a digest keeps the webhook id short and stable.
	const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(refundid));
	const hex = [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
	return `evt_reversal_${appid}_${customIdToken(customid)}_${hex}`;
}

/** The `conversion.reversed` webhook of a refund (fixed id per refund): one event with every ledger's rewards. */
function reversedWebhook(appid: string, event: EventParties, reason: string | null, outcomes: ReversalOutcome[], eventid: string) {
	const first = outcomes[0]!;
	return webhookEvent(
		appid,
		"conversion.reversed",
		{
			customid: event.customid,
			eventname: event.eventname,
			userkey: event.friendUserkey,
			referrerkey: event.referrerUserkey,
			refundvalue: first.refundvalue,
			refunded: first.refunded,
			transactionvalue: first.transactionvalue,
			full: first.full,
			reason: reason ?? "",
			rewards: outcomes.flatMap((o) => o.rewards),
		},
		eventid,
	);
}

/**
 * Records `conversion.reversed` in the same D1 transaction as the decision
 * to commit the refund, from what the ledgers' commits will answer (their
 * prepares' previews): it exists exactly when the refund is certain to
 * apply, whatever dies after. A repeat of a refund records it again under
 * its fixed id (nothing twice), which repairs an event lost before this
 * existed. An app without a webhook URL gets no webhook events (docs/webhooks.md).
 */
function announceWithDecision(ctx: WorkContext, event: EventParties, reason: string | null, eventid: string) {
	const announced: { event: OutboxEvent | null } = { event: null };
	const withDecision: CoordinationOptions["withDecision"] = (previews, committed) => {
		announced.event = null;
		const outcomes = previews.map((p) => p?.reversal);
		const known = outcomes.filter((o): o is ReversalOutcome => o !== undefined);
		if (known.length === 0 || known.length < outcomes.length || !known.some((o) => o.changed || o.repeat)) return [];
		announced.event = reversedWebhook(ctx.app.appid, event, reason, known, eventid);
		return [insertOutboxEvent(ctx.env.DB, announced.event, allOf(committed, appHasWebhook(ctx.app.appid)))];
	};
	return { announced, withDecision };
}

const refused = (error: ApiError) => ({ ...failureOf(error), kind: "refused" as const });

export type ReverseAnswer = { message: string; customid: string; duplicate: boolean } & Record<string, unknown>;

/**
 * The event's parties from D1, else from its gate: D1's row follows the projection (issue 49), so an event refunded
 * within seconds of its conversion is found in the gate that claimed it (D1 was read already, hence no legacy read).
 * Refunds and Stripe disputes (integrations/stripe/disputes.ts) find an event's parties here.
 */
export async function eventParties(env: Env, appid: string, customid: string): Promise<EventParties | null> {
	const fromD1 = await findEventParties(env.DB, appid, customid);
	if (fromD1) return fromD1;
	const claimed = await eventGateFor(env, appid, customid).peek(appid, customid, false);
	return claimed ? partiesOfClaimedEvent(env.DB, appid, claimed) : null;
}

/** Reverses a conversion event's rewards in every ledger they reached, all or none; a lock held by another change is retried a few times, then `retry_later`. */
export async function reverseConversion(ctx: WorkContext, input: ReverseRequest): Promise<WorkOutcome<ReverseAnswer>> {
	const event = await eventParties(ctx.env, ctx.app.appid, input.customid);
	if (!event) return refused(eventNotFound(input.customid));
	if (input.growthhack !== undefined && input.growthhack.toLowerCase() !== event.growthhack.toLowerCase()) {
		return refused(eventNotFound(input.customid));
	}
	const refundvalue = input.refundvalue === undefined ? null : toHundredths(input.refundvalue);
	const transactionvalue = event.transactionvalue === null ? null : toHundredths(event.transactionvalue);
	const operation: LedgerOperation = {
		kind: "reverse",
		customid: event.customid,
		// Every reward of the event names its user as the friend: each ledger seeks them by it (ledger schema step 17).
		friendUserkey: event.friendUserkey,
		refundid: input.refundid,
		refundvalue,
		refundedTotal: input.refundedTotal === undefined ? null : toHundredths(input.refundedTotal),
		transactionvalue,
		reason: input.reason ?? null,
		audit: input.audit,
	};
	const userkeys = [
		event.friendUserkey,
		...(event.referrerUserkey && event.referrerUserkey !== event.friendUserkey ? [event.referrerUserkey] : []),
	];
	const eventid = await eventIdOf(ctx.app.appid, event.customid, operation.refundid);
	const { announced, withDecision } = announceWithDecision(ctx, event, operation.reason, eventid);
	const result = await reverseAcrossLedgers(
		ctx,
		userkeys.map((userkey) => ({ userkey, operation })),
		{ withDecision },
	);
	// reward_locked says it is retryable: retry_later; anything else is refused.
	if (!result.ok) return failureOf(ledgerError(result.error));
	// Recorded with the decision; sent now when this call applied the refund (a repeat's was sent before, or the sweep sends it).
	const sent = announced.event;
	if (sent && ctx.app.webhookurl && result.results.some((r) => r.reversal?.changed)) ctx.waitUntil(sendOutboxEvents(ctx.env, [sent]));

	const outcomes = result.results.map((r) => r.reversal);
	const known = outcomes.filter((o): o is ReversalOutcome => o !== undefined);
	const first = known[0];
	if (!first || known.length < outcomes.length) {
		// The decision is stored but a ledger did not confirm: it applies the refund when its lease ends.
		const value = { message: "Reversal accepted; it completes in a moment.", customid: event.customid, duplicate: false, rewards: [] };
		return { kind: "applied", value };
	}
	const changed = known.some((o) => o.changed);
	const repeat = !changed && known.some((o) => o.repeat);
	const rewards = known.flatMap((o) => o.rewards);
	let message = `Reversed; ${rewards.length} reward(s) changed.`;
	if (!changed)
		message = repeat ? "This refund was already applied; nothing changed." : "The event is already fully reversed; nothing changed.";
	const value = {
		message,
		customid: event.customid,
		refundvalue: first.refundvalue,
		refunded: first.refunded,
		transactionvalue: event.transactionvalue === null ? null : fromHundredths(transactionvalue ?? 0),
		full: first.full,
		duplicate: !changed,
		rewards,
	};
	return { kind: changed ? "applied" : "duplicate", value };
}
