import { z } from "zod";
import { readSession } from "../db/session";
import { findUserAndCampaign } from "../db/user-reads";
import { userkeyOfRewardId } from "../domain/ledger-ids";
import { campaignNotFound, refuseErased, userNotFound } from "../http/errors";
import { campaignId, id, optionalEmail, optionalId, optionalText } from "../http/fields";
import { defineOperation } from "../http/operation";
import { ledgerFor } from "../ledger/stub";

/**
 * Operation 1: the user's earnings, unit -> growth hack -> campaign, filtered
 * by `campaignid` (required by the spec) and `growthhack`. Read from the
 * ledger's running totals: the cost does not grow with the user's rewards.
 */
export const getuserbalance = defineOperation({
	schema: z.object({
		userkey: id,
		email: optionalEmail,
		useraccountid: optionalId,
		campaignid: campaignId,
		growthhack: optionalText(100),
	}),
	async handle({ env, app }, input) {
		const filter = { campaignid: input.campaignid, growthhack: input.growthhack };
		// With a userkey the ledger may answer alone (no D1 at all): rewards of this campaign in the
		// ledger of (app, userkey) prove both that the user exists and that the campaign is the app's.
		// An erased user's ledger answers null: D1 then says it is erased (410).
		if (input.userkey && userkeyOfRewardId(`${input.userkey}-1`)) {
			const userbalance = await ledgerFor(env, app.appid, input.userkey).liveBalance(filter);
			if (userbalance && userbalance.length > 0) return { userbalance };
		}
		// The user (and whether the campaign is the app's) in one round trip: the nearest replica first, then the primary.
		const user =
			(await findUserAndCampaign(readSession(env.DB), app.appid, input, input.campaignid, app.campaignAppid)) ??
			(await findUserAndCampaign(env.DB, app.appid, input, input.campaignid, app.campaignAppid));
		if (!user) throw userNotFound();
		refuseErased(user);
		if (!user.campaignFound) throw campaignNotFound();
		return { userbalance: await ledgerFor(env, app.appid, user.userkey).balance(filter) };
	},
});
