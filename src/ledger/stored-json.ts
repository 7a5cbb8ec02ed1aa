import { z } from "zod";
import { type LedgerAudit, ledgerAuditSchema } from "../db/audit";
import { parseStoredJson } from "../db/stored-json";
import type { OutboxEvent, WebhookType } from "../domain/outbox-event";
import { FRAUD_SIGNALS } from "../fraud/signals";
import type { CouponClaim, LedgerOperation, LedgerOperationResult, ReversalOutcome, ReverseOperation } from "./transaction-types";
import type { LedgerReward, Redemption, StatusChange } from "./types";

/**
 * The schemas of the JSON the ledger keeps in its own SQLite tables and
 * reads back later, possibly written by an older deploy: outbox payloads,
 * prepared transactions and their results, recorded redemption answers and
 * refund outcomes, a reward's fraud signals. Read through `readLedgerJson`,
 * a row that no longer has the shape this code relies on fails loudly,
 * naming the table and column, instead of flowing on with a type it does not
 * have. Each schema is checked against the TypeScript type it stands for
 * (`satisfies z.ZodType<...>`); answers replayed to callers keep any field
 * the schema does not name (loose objects), exactly as they were recorded.
 */

/**
 * `text` from the ledger's `table`.`column`, parsed with `schema` (see
 * db/stored-json.ts). The error says "ledger": D1 has tables of the same
 * names (rewards, outbox events).
 */
export function readLedgerJson<S extends z.ZodType>(table: string, column: string, text: string, schema: S): z.output<S> {
	return parseStoredJson(`ledger ${table}`, column, text, schema);
}

// ---- rewards.fraudsignals and rewards as answered ---------------------------------------------

export const fraudSignalsSchema = z.array(z.enum(FRAUD_SIGNALS));

const rewardStatus = z.enum(["Approved", "UnderReview", "Suspicious", "Rejected", "Rewarded"]);
const settableStatus = z.enum(["Approved", "UnderReview", "Suspicious", "Rejected"]);

export const ledgerRewardSchema = z.looseObject({
	rewarddtlid: z.string(),
	rewardstatus: rewardStatus,
	comment: z.string(),
	eventname: z.string(),
	reward: z.string(),
	rewardunit: z.string(),
	rewardedon: z.string(),
	rewardtype: z.enum(["InstoreCredits", "Coupon", "Stripe"]),
	usertype: z.enum(["Friend", "Referrer"]),
	coupon: z.string(),
	couponimage: z.string(),
	coupondetails: z.string(),
	couponname: z.string(),
	campaignid: z.string(),
	campaignname: z.string(),
	growthhack: z.string(),
	friendemail: z.string(),
	friendname: z.string(),
	friendprofileimage: z.string(),
	fraudsignals: fraudSignalsSchema,
	reversed: z.boolean(),
	reversedamount: z.string(),
	// Results stored before Stripe payouts existed have none.
	payoutid: z.string().default(""),
	key: z.string(),
	friendUserkey: z.string(),
	amount: z.number(),
	redeemed: z.number(),
	reversedAmount: z.number(),
	settled: z.number(),
	createdAt: z.string(),
	updatedAt: z.string(),
	holdUntil: z.string().nullable(),
	rewardedAt: z.string().nullable(),
	version: z.number(),
}) satisfies z.ZodType<LedgerReward>;

// ---- refunds.outcome ----------------------------------------------------------------------------

const rewardSnapshot = z.looseObject({
	rewardstatus: rewardStatus,
	reward: z.number(),
	reversedamount: z.number(),
	redeemed: z.number(),
});

export const reversalOutcomeSchema = z.looseObject({
	customid: z.string(),
	refundid: z.string(),
	refundvalue: z.number(),
	refunded: z.number(),
	transactionvalue: z.number().nullable(),
	full: z.boolean(),
	changed: z.boolean(),
	repeat: z.boolean().optional(),
	rewards: z.array(
		z.looseObject({
			rewarddtlid: z.string(),
			userkey: z.string(),
			usertype: z.string(),
			rewardunit: z.string(),
			before: rewardSnapshot,
			after: rewardSnapshot,
			reversedamount: z.number(),
			clawback: z.number(),
		}),
	),
}) satisfies z.ZodType<ReversalOutcome>;

// ---- idempotency_keys.result --------------------------------------------------------------------

export const redemptionSchema = z.looseObject({
	redeemed: z.number(),
	rewards: z.array(ledgerRewardSchema),
}) satisfies z.ZodType<Redemption>;

// ---- ledger_transactions.payload and .result ----------------------------------------------------

const statusChangeSchema = z.object({
	rewarddtlid: z.string(),
	status: settableStatus,
	message: z.string().nullable(),
}) satisfies z.ZodType<StatusChange>;

export const reverseOperationSchema = z.object({
	kind: z.literal("reverse"),
	customid: z.string(),
	friendUserkey: z.string().optional(),
	refundid: z.string(),
	refundvalue: z.number().nullable(),
	refundedTotal: z.number().nullable().optional(),
	transactionvalue: z.number().nullable(),
	reason: z.string().nullable(),
	audit: ledgerAuditSchema.optional(),
}) satisfies z.ZodType<ReverseOperation & { audit?: LedgerAudit }>;

export const ledgerOperationSchema = z.discriminatedUnion("kind", [
	z.object({ kind: z.literal("status"), changes: z.array(statusChangeSchema), audit: ledgerAuditSchema.optional() }),
	reverseOperationSchema,
]) satisfies z.ZodType<LedgerOperation>;

export const ledgerOperationResultSchema = z.looseObject({
	rewards: z.array(ledgerRewardSchema),
	reversal: reversalOutcomeSchema.optional(),
}) satisfies z.ZodType<LedgerOperationResult>;

// ---- outbox.payload -----------------------------------------------------------------------------

export const couponClaimSchema = z.object({
	seq: z.number(),
	couponKey: z.string(),
	campaignid: z.number(),
}) satisfies z.ZodType<CouponClaim>;

/** Every webhook type (src/outbox/events.ts); the check below fails to compile when one is added there and not here. */
const WEBHOOK_TYPES = [
	"user.registered",
	"referral.attributed",
	"conversion.recorded",
	"reward.created",
	"reward.status_changed",
	"reward.redeemed",
	"conversion.reversed",
	"reward.reversed",
	"reward.clawback_paid",
	"reward.payout_failed",
] as const satisfies readonly WebhookType[];
const everyWebhookType: Exclude<WebhookType, (typeof WEBHOOK_TYPES)[number]> extends never ? true : false = true;
void everyWebhookType;

/** A webhook event waiting in the ledger's outbox (the ledger queues webhooks only, never emails). */
export const webhookEventSchema = z.object({
	eventid: z.string(),
	appid: z.string(),
	kind: z.literal("webhook"),
	type: z.enum(WEBHOOK_TYPES),
	payload: z.record(z.string(), z.unknown()),
	createdAt: z.string(),
}) satisfies z.ZodType<OutboxEvent>;

/** A projection entry: its reward, and the `conversion.recorded` event that travels with it (issue 33; outbox-queue.ts queueProjection). */
export const projectionPayloadSchema = z.object({
	seq: z.number(),
	event: webhookEventSchema.optional(),
	/** Another ledger's records riding with the event (ledger/carried-records.ts), parsed there with the message's part schema. */
	carried: z.unknown().optional(),
});
