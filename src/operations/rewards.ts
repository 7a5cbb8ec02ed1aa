import { z } from "zod";
import { findUserAndDistribution } from "../db/user-reads";
import { userkeyOfRewardId } from "../domain/ledger-ids";
import { ApiError, campaignNotFound, ledgerError, refuseErased, rewardNotFound, userNotFound } from "../http/errors";
import { exactAmount, id, optionalCampaignId, optionalEmail, optionalId, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { appKeyAudit } from "../ledger/audit";
import { ledgerFor } from "../ledger/stub";
import { statusChangesSchema } from "./schemas";
import { changeRewardStatuses } from "./status-change";
import { valueOrThrow } from "./work";

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
		const found = await findUserAndDistribution(env.DB, app.appid, input, input.campaignid, app.campaignAppid);
		if (!found) throw userNotFound();
		const { user, campaign } = found;
		refuseErased(user);
		const ledger = ledgerFor(env, app.appid, user.userkey);
		if (input.rewarddtlids) {
			const result = await ledger.redeemByIds(input.rewarddtlids, idempotency, appKeyAudit(app.apikey));
			if (!result.ok) throw ledgerError(result.error);
			return { message: `Redeemed ${result.redeemed}.`, redeemed: result.redeemed };
		}
		if (input.campaignid !== undefined) {
			if (!campaign) throw campaignNotFound();
			if (campaign.distribution === "Stripe") {
				throw new ApiError(400, "not_wallet_distribution", "This campaign pays its rewards into Stripe; they are not redeemed.");
			}
			if (campaign.distribution === "Coupon") {
				throw new ApiError(400, "coupon_distribution", "This campaign distributes coupons; they are not redeemed by amount.");
			}
		}
		const result = await ledger.redeemByAmount(
			{
				amount: input.amount ?? 0,
				campaignid: input.campaignid,
				growthhack: input.growthhack,
				rewardunit: input.rewardunit,
				idempotency,
			},
			appKeyAudit(app.apikey),
		);
		if (!result.ok) throw ledgerError(result.error);
		return { message: `Redeemed ${result.redeemed}.`, redeemed: result.redeemed };
	},
});

/** Operation 9: see changeRewardStatuses. */
export const changerewardstatus = defineOperation({
	mutating: true,
	schema: z.object({ rewardslist: statusChangesSchema }),
	async handle(ctx, { rewardslist }) {
		const count = valueOrThrow(await changeRewardStatuses(ctx.env, ctx.app.appid, rewardslist, appKeyAudit(ctx.app.apikey)));
		return { message: `Updated ${count} reward(s).` };
	},
});

const ledgerOf = (ctx: OperationContext, userkey: string) => ledgerFor(ctx.env, ctx.app.appid, userkey);

/** Operation 11: a reward's status and the reason for it. */
export const checkrewardstatus = defineOperation({
	schema: z.object({ rewarddtlid: id }),
	async handle(ctx, { rewarddtlid }) {
		const userkey = userkeyOfRewardId(rewarddtlid);
		if (!userkey) throw rewardNotFound();
		// The ledger answers for its user: an erased user's rewards are refused there (410), with no D1 read.
		const found = await ledgerOf(ctx, userkey).findReward(rewarddtlid);
		if (!found.ok) throw ledgerError(found.error);
		const { reward } = found;
		return {
			message: "Success",
			rewarddtlid: reward.rewarddtlid,
			rewardstatus: reward.rewardstatus,
			comment: reward.comment,
			fraudsignals: reward.fraudsignals,
			payoutid: reward.payoutid,
			statuscode: 1,
		};
	},
});
