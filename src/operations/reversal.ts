import { z } from "zod";
import { customId, exactAmount, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { appKeyAudit } from "../ledger/audit";
import { reverseConversion } from "./reversal-work";
import { valueOrThrow } from "./work";

/** The refund's name in the ledgers: the caller's refundid, else the Idempotency-Key; a full reversal is one refund whatever its retries. */
function refundIdOf(input: { refundid?: string; refundvalue?: number }, ctx: OperationContext): string {
	if (input.refundid !== undefined) return `id:${input.refundid}`;
	if (input.refundvalue === undefined) return "full";
	if (ctx.idempotency) return `key:${ctx.idempotency.key}`;
	return `call:${crypto.randomUUID()}`;
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
		return valueOrThrow(await reverseConversion(ctx, { ...input, refundid: refundIdOf(input, ctx), audit: appKeyAudit(ctx.app.apikey) }));
	},
});
