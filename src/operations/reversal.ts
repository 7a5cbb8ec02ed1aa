import { z } from "zod";
import { type CoordinatedResult, type LedgerPart, runAcrossLedgers } from "../coordination/ledger-transaction";
import { type EventParties, findEventParties } from "../db/events";
import { appHasWebhook, recordOutboxEvent } from "../db/outbox-events";
import { ApiError, ledgerError } from "../http/errors";
import { customId, exactAmount, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import type { ReversalOutcome, ReverseOperation } from "../ledger/reversal";
import { sendOutboxEvents, webhookEvent } from "../outbox/events";
import { fromHundredths, toHundredths } from "../rewards/money";

/** How often a refund meeting another change of the same rewards (reward_locked) is tried again before answering 409. */
const LOCKED_RETRIES = 8;

const eventNotFound = (customid: string) =>
	new ApiError(404, "event_not_found", `No conversion event with customid ${customid} in this app.`, { customid });

/** The refund's name in the ledgers: the caller's refundid, else the Idempotency-Key; a full reversal is one refund whatever its retries. */
function refundIdOf(input: { refundid?: string; refundvalue?: number }, ctx: OperationContext): string {
	if (input.refundid !== undefined) return `id:${input.refundid}`;
	if (input.refundvalue === undefined) return "full";
	if (ctx.idempotency) return `key:${ctx.idempotency.key}`;
	return `call:${crypto.randomUUID()}`;
}

/** Runs the refund across the ledgers, trying again while another change holds the event's rewards. */
async function reverseAcrossLedgers(ctx: OperationContext, parts: LedgerPart[]): Promise<CoordinatedResult> {
	for (let attempt = 0; ; attempt++) {
		const result = await runAcrossLedgers(ctx.env, ctx.app.appid, parts);
		if (result.ok || result.error.code !== "reward_locked" || attempt >= LOCKED_RETRIES) return result;
		// Randomized so two refunds of one event that block each other in two ledgers do not meet again.
		await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** Math.min(attempt, 4) * (0.5 + Math.random())));
	}
}

async function eventIdOf(appid: string, customid: string, refundid: string): Promise<string> {
	// Refund ids may be long (an Idempotency-Key): a digest keeps the webhook id short and stable.
	const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(refundid));
	const hex = [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
	return `evt_reversal_${appid}_${customid}_${hex}`;
}

/** Records `conversion.reversed` once per refund (fixed id), so a repeat of the call repairs an event a crash lost. */
async function recordReversedEvent(ctx: OperationContext, event: EventParties, reason: string | null, outcomes: ReversalOutcome[]) {
	const first = outcomes[0]!;
	const webhook = webhookEvent(
		ctx.app.appid,
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
		await eventIdOf(ctx.app.appid, event.customid, first.refundid),
	);
	// An app without a webhook URL gets no webhook events (docs/webhooks.md); the insert checks the URL again.
	if (!ctx.app.webhookurl) return;
	if (await recordOutboxEvent(ctx.env.DB, webhook, appHasWebhook(ctx.app.appid))) ctx.waitUntil(sendOutboxEvents(ctx.env, [webhook]));
}

/**
 * Refunds: reverses a conversion event's rewards in full or in part, in
 * every ledger they reached (friend and referrer) all or none, with what was
 * already redeemed becoming a clawback (docs/rewards.md, "Refunds and
 * clawbacks"). Idempotent per (app, customid, refund): see refundIdOf.
 */
export const reverseconversionevent = defineOperation({
	mutating: true,
	schema: z.object({
		customid: customId,
		refundvalue: exactAmount.pipe(z.number().positive("must be above 0")).optional(),
		reason: optionalText(1000),
		refundid: optionalText(100),
		growthhack: optionalText(100),
	}),
	async handle(ctx, input) {
		const event = await findEventParties(ctx.env.DB, ctx.app.appid, input.customid);
		if (!event) throw eventNotFound(input.customid);
		if (input.growthhack !== undefined && input.growthhack.toLowerCase() !== event.growthhack.toLowerCase()) {
			throw eventNotFound(input.customid);
		}
		const refundvalue = input.refundvalue === undefined ? null : toHundredths(input.refundvalue);
		const transactionvalue = event.transactionvalue === null ? null : toHundredths(event.transactionvalue);
		const operation: ReverseOperation = {
			kind: "reverse",
			customid: event.customid,
			refundid: refundIdOf(input, ctx),
			refundvalue,
			transactionvalue,
			reason: input.reason ?? null,
		};
		const userkeys = [
			event.friendUserkey,
			...(event.referrerUserkey && event.referrerUserkey !== event.friendUserkey ? [event.referrerUserkey] : []),
		];
		const result = await reverseAcrossLedgers(
			ctx,
			userkeys.map((userkey) => ({ userkey, operation })),
		);
		if (!result.ok) throw ledgerError(result.error);

		const outcomes = result.results.map((r) => r.reversal);
		const known = outcomes.filter((o): o is ReversalOutcome => o !== undefined);
		const first = known[0];
		if (!first || known.length < outcomes.length) {
			// The decision is stored but a ledger did not confirm: it applies the refund when its lease ends.
			return { message: "Reversal accepted; it completes in a moment.", customid: event.customid, duplicate: false, rewards: [] };
		}
		const changed = known.some((o) => o.changed);
		const repeat = !changed && known.some((o) => o.repeat);
		if (changed || repeat) await recordReversedEvent(ctx, event, operation.reason, known);
		const rewards = known.flatMap((o) => o.rewards);
		let message = `Reversed; ${rewards.length} reward(s) changed.`;
		if (!changed)
			message = repeat ? "This refund was already applied; nothing changed." : "The event is already fully reversed; nothing changed.";
		return {
			message,
			customid: event.customid,
			refundvalue: first.refundvalue,
			refunded: first.refunded,
			transactionvalue: event.transactionvalue === null ? null : fromHundredths(transactionvalue ?? 0),
			full: first.full,
			duplicate: !changed,
			rewards,
		};
	},
});
