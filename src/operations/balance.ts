import { z } from "zod";
import { toUser, type UserRow, userLookup } from "../db/users";
import { campaignNotFound, userNotFound } from "../http/errors";
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
		const lookup = userLookup(env.DB, app.appid, input);
		if (!lookup) throw userNotFound();
		const [userResult, campaignResult] = await env.DB.batch([
			lookup,
			env.DB.prepare("SELECT 1 AS found FROM campaigns WHERE campaignid = ? AND appid = ?").bind(input.campaignid, app.appid),
		]);
		const row = userResult?.results[0] as UserRow | undefined;
		if (!row) throw userNotFound();
		if (!campaignResult?.results[0]) throw campaignNotFound();
		const user = toUser(row);
		const userbalance = await ledgerFor(env, app.appid, user.userkey).balance({
			campaignid: input.campaignid,
			growthhack: input.growthhack,
		});
		return { userbalance };
	},
});
