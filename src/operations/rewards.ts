import { z } from "zod";
import { runAcrossLedgers } from "../coordination/ledger-transaction";
import { toUser, type UserRow, userLookup } from "../db/users";
import { userkeyOfRewardId } from "../domain/ledger-ids";
import { ApiError, badRequest, campaignNotFound, rewardNotFound, userNotFound } from "../http/errors";
import { exactAmount, id, optionalCampaignId, optionalEmail, optionalId, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { ledgerFor } from "../ledger/stub";
import type { LedgerError, SettableStatus, StatusChange } from "../ledger/types";

/** Turns a ledger's expected failure into the API error it stands for. */
export function ledgerError(error: LedgerError): ApiError {
	switch (error.code) {
		case "reward_not_found":
			return rewardNotFound();
		case "invalid_status_transition":
			return new ApiError(409, "invalid_status_transition", `${error.rewarddtlid}: ${error.message}`, { rewarddtlid: error.rewarddtlid });
		case "insufficient_balance":
			return new ApiError(409, "insufficient_balance", `Cannot redeem more than the approved balance (${error.approved}).`, {
				approved: error.approved,
			});
		case "reward_not_redeemable":
			return new ApiError(409, "reward_not_redeemable", `${error.rewarddtlid}: ${error.message}`, { rewarddtlid: error.rewarddtlid });
		case "invalid_amount":
			return badRequest(`amount: ${error.message}`, { fields: ["amount"] });
		case "reward_locked":
			return new ApiError(409, "reward_locked", `${error.rewarddtlid ? `${error.rewarddtlid}: ` : ""}${error.message}`, {
				rewarddtlid: error.rewarddtlid,
				retryable: true,
			});
		case "rewardunit_required":
			return new ApiError(
				400,
				"rewardunit_required",
				`The approved rewards span several units (${error.rewardunits.join(", ")}); name one in rewardunit.`,
				{ fields: ["rewardunit"], rewardunits: error.rewardunits },
			);
		case "idempotency_key_reused":
			return new ApiError(422, "idempotency_key_reused", error.message);
		case "refund_exceeds_transaction":
			return new ApiError(409, "refund_exceeds_transaction", `Cannot refund more than the transaction value: ${error.message}.`, {
				transactionvalue: error.transactionvalue,
				refunded: error.refunded,
			});
		case "refundid_reused":
			return new ApiError(409, "refundid_reused", `${error.message}; use a new refundid.`);
		case "transaction_aborted":
		case "invalid_operation":
			throw new Error(`ledger: ${error.code}: ${error.message}`);
	}
}

const rewardIds = z.array(id).min(1, "must name at least one reward").max(100, "at most 100 rewards per call");

/**
 * Operation 7: redeems wallet credits, by reward ids (all or nothing) or by
 * amount (oldest approved first, refused whole above the approved balance).
 * With both, the ids win (the spec's order of preference).
 */
export const redeemrewards = defineOperation({
	mutating: true,
	schema: z
		.object({
			userkey: id,
			email: optionalEmail,
			useraccountid: optionalId,
			rewarddtlids: rewardIds.optional(),
			amount: exactAmount.pipe(z.number().positive("must be above 0")).optional(),
			growthhack: optionalText(100),
			campaignid: optionalCampaignId,
			rewardunit: optionalText(20),
		})
		.refine((v) => v.rewarddtlids !== undefined || v.amount !== undefined, {
			message: "send rewarddtlids or amount",
			path: ["amount"],
		}),
	async handle({ env, app, idempotency }, input) {
		const lookup = userLookup(env.DB, app.appid, input);
		if (!lookup) throw userNotFound();
		const [userResult, campaignResult] = await env.DB.batch<Record<string, unknown>>([
			lookup,
			env.DB.prepare("SELECT distribution FROM campaigns WHERE campaignid = ? AND appid = ?").bind(input.campaignid ?? null, app.appid),
		]);
		const row = userResult?.results[0] as UserRow | undefined;
		if (!row) throw userNotFound();
		const ledger = ledgerFor(env, app.appid, toUser(row).userkey);
		if (input.rewarddtlids) {
			const result = await ledger.redeemByIds(input.rewarddtlids, idempotency);
			if (!result.ok) throw ledgerError(result.error);
			return { message: `Redeemed ${result.redeemed}.`, redeemed: result.redeemed };
		}
		if (input.campaignid !== undefined) {
			const campaign = campaignResult?.results[0] as { distribution: string } | undefined;
			if (!campaign) throw campaignNotFound();
			if (campaign.distribution === "Coupon") {
				throw new ApiError(400, "coupon_distribution", "This campaign distributes coupons; they are not redeemed by amount.");
			}
		}
		const result = await ledger.redeemByAmount({
			amount: input.amount ?? 0,
			campaignid: input.campaignid,
			growthhack: input.growthhack,
			rewardunit: input.rewardunit,
			idempotency,
		});
		if (!result.ok) throw ledgerError(result.error);
		return { message: `Redeemed ${result.redeemed}.`, redeemed: result.redeemed };
	},
});

/** `Under Review` is the spec's input spelling; any case and spacing is accepted. */
const settableStatus = z
	.string()
	.transform((v) => v.replace(/\s+/g, "").toLowerCase())
	.pipe(z.enum(["approved", "rejected", "suspicious", "underreview"], { error: "must be Approved, Rejected, Suspicious or Under Review" }))
	.transform((v): SettableStatus => (v === "underreview" ? "UnderReview" : ((v[0]?.toUpperCase() + v.slice(1)) as SettableStatus)));

/** Groups changes by the ledger that owns each reward; an id that names no ledger is unknown. */
function byLedger(changes: StatusChange[]): Map<string, StatusChange[]> {
	const groups = new Map<string, StatusChange[]>();
	for (const change of changes) {
		const userkey = userkeyOfRewardId(change.rewarddtlid);
		if (!userkey) throw rewardNotFound();
		groups.set(userkey, [...(groups.get(userkey) ?? []), change]);
	}
	return groups;
}

/** The entries of a status change (changerewardstatus's `rewardslist`, the admin API's `changes`). */
export const statusChangesSchema = z
	.array(z.object({ rewarddtlid: id, rewardstatus: settableStatus, message: optionalText(1000) }))
	.min(1, "must hold at least one entry")
	.max(100, "at most 100 entries per call")
	.refine((list) => new Set(list.map((e) => e.rewarddtlid)).size === list.length, "names a reward twice");

/**
 * Operation 9: every entry or none. Within one user's ledger the change is
 * one transaction; across users it is a prepare/commit between the ledgers
 * concerned (coordination/ledger-transaction.ts), so a redemption running at
 * the same moment can never leave it half applied.
 */
export async function changeRewardStatuses(env: Env, appid: string, entries: z.output<typeof statusChangesSchema>): Promise<number> {
	const changes = entries.map((e) => ({ rewarddtlid: e.rewarddtlid, status: e.rewardstatus, message: e.message ?? null }));
	const parts = [...byLedger(changes)].map(([userkey, list]) => ({ userkey, operation: { kind: "status" as const, changes: list } }));
	const result = await runAcrossLedgers(env, appid, parts);
	if (!result.ok) throw ledgerError(result.error);
	return changes.length;
}

/** Operation 9: see changeRewardStatuses. */
export const changerewardstatus = defineOperation({
	mutating: true,
	schema: z.object({ rewardslist: statusChangesSchema }),
	async handle(ctx, { rewardslist }) {
		const count = await changeRewardStatuses(ctx.env, ctx.app.appid, rewardslist);
		return { message: `Updated ${count} reward(s).` };
	},
});

const ledgerOf = (ctx: OperationContext, userkey: string) => ledgerFor(ctx.env, ctx.app.appid, userkey);

/** Operation 11: a reward's status and the reason for it. */
export const checkrewardstatus = defineOperation({
	schema: z.object({ rewarddtlid: id }),
	async handle(ctx, { rewarddtlid }) {
		const userkey = userkeyOfRewardId(rewarddtlid);
		const reward = userkey ? await ledgerOf(ctx, userkey).getReward(rewarddtlid) : null;
		if (!reward) throw rewardNotFound();
		return {
			message: "Success",
			rewarddtlid: reward.rewarddtlid,
			rewardstatus: reward.rewardstatus,
			comment: reward.comment,
			fraudsignals: reward.fraudsignals,
			statuscode: 1,
		};
	},
});
