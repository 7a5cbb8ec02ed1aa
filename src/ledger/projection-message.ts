import { z } from "zod";
import { auditEntrySchema } from "../db/audit";
import type { ProjectedRow, ProjectionMessage } from "../db/projection-batch";
import { webhookEventSchema } from "./stored-json";

/**
 * The zod schema of a projection queue message (db/projection-batch.ts), kept
 * beside the ledger that writes it: the consumer parses every message with
 * it, so a message of an older or newer deploy that lost a field is refused
 * by name instead of writing a half row.
 */

const projectedRowSchema = z.object({
	seq: z.number(),
	campaignid: z.number(),
	eventname: z.string(),
	usertype: z.string(),
	amount: z.number(),
	reversed: z.number(),
	rewardunit: z.string(),
	rewardtype: z.string(),
	status: z.string(),
	redeemed: z.number(),
	comment: z.string().nullable(),
	friend_userkey: z.string(),
	created_at: z.string(),
	updated_at: z.string(),
	version: z.number(),
	fraudsignals: z.string(),
	payoutid: z.string().nullable(),
	payout_state: z.string().nullable(),
}) satisfies z.ZodType<ProjectedRow>;

/** One ledger's records (a part of a message: db/projection-batch.ts, `also`; a carried part as its carrier stores it). */
export const partSchema = z.object({
	projection: z.literal(1),
	appid: z.string(),
	userkey: z.string(),
	sentAt: z.number(),
	rewards: z.array(z.object({ id: z.number(), ref: z.string(), row: projectedRowSchema, event: webhookEventSchema.optional() })),
	webhooks: z.array(z.object({ id: z.number(), ref: z.string(), event: webhookEventSchema })),
	audits: z.array(z.object({ id: z.number(), ref: z.string(), entry: auditEntrySchema })),
	carrier: z.object({ userkey: z.string(), id: z.number().optional(), ref: z.string().optional() }).optional(),
});

/** A message: the sending ledger's part and the parts of other ledgers it carries (issue 49), at most one level deep. */
export const projectionMessageSchema = partSchema.extend({ also: z.array(partSchema).optional() }) satisfies z.ZodType<ProjectionMessage>;

/** The copy of a reward row a message carries: only what the projection and its counters read. */
export function projectedRow(row: ProjectedRow): ProjectedRow {
	return {
		seq: row.seq,
		campaignid: row.campaignid,
		eventname: row.eventname,
		usertype: row.usertype,
		amount: row.amount,
		reversed: row.reversed,
		rewardunit: row.rewardunit,
		rewardtype: row.rewardtype,
		status: row.status,
		redeemed: row.redeemed,
		comment: row.comment,
		friend_userkey: row.friend_userkey,
		created_at: row.created_at,
		updated_at: row.updated_at,
		version: row.version,
		fraudsignals: row.fraudsignals ?? "[]",
		payoutid: row.payoutid ?? null,
		payout_state: row.payout_state ?? null,
	};
}

/** What the consumer acknowledges to a ledger: entries it wrote, each removed only while at most `version` (rewards) and, when it carries an event, only with `eventid` (outbox-entries.ts, deleteAcked). */
export interface ProjectionAck {
	id: number;
	ref: string;
	version: number | null;
	eventid?: string | null;
}
