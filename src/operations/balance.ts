import { z } from "zod";
import { type D1Reader, readSession } from "../db/session";
import { type UserRef, type UserRow, userLookup } from "../db/users";
import { userkeyOfRewardId } from "../domain/ledger-ids";
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
		const filter = { campaignid: input.campaignid, growthhack: input.growthhack };
		// With a userkey the ledger may answer alone (no D1 at all): rewards of this campaign in the
		// ledger of (app, userkey) prove both that the user exists and that the campaign is the app's.
		if (input.userkey && userkeyOfRewardId(`${input.userkey}-1`)) {
			const userbalance = await ledgerFor(env, app.appid, input.userkey).balance(filter);
			if (userbalance.length > 0) return { userbalance };
		}
		const user = (await lookUp(readSession(env.DB), app.appid, input)) ?? (await lookUp(env.DB, app.appid, input));
		if (!user) throw userNotFound();
		if (!user.campaignFound) throw campaignNotFound();
		return { userbalance: await ledgerFor(env, app.appid, user.userkey).balance(filter) };
	},
});

/** The user (and whether the campaign is the app's) in one round trip; null when `db` does not know the user. */
async function lookUp(db: D1Reader, appid: string, ref: UserRef & { campaignid: number }) {
	const lookup = userLookup(db, appid, ref);
	if (!lookup) return null;
	const [userResult, campaignResult] = await db.batch([
		lookup,
		db.prepare("SELECT 1 AS found FROM campaigns WHERE campaignid = ? AND appid = ?").bind(ref.campaignid, appid),
	]);
	const row = userResult?.results[0] as UserRow | undefined;
	return row ? { userkey: row.userkey, campaignFound: campaignResult?.results[0] !== undefined } : null;
}
