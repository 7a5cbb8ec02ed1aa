import { z } from "zod";
import { findUserAndReferrer } from "../db/user-reads";
import { findReferrer } from "../db/users";
import { ApiError, refuseErased, userErased, userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId } from "../http/fields";
import { defineOperation } from "../http/operation";
import { attributeUserToReferrer } from "./attribution";

const referrerCode = id.pipe(z.string().max(32, "is too long"));
const unknownCode = () => new ApiError(404, "referrer_code_not_found", "No user of this app has that referral code.", { statuscode: 0 });

/** Operation 10: sets the user's referrer, once. */
export const applyreferrercode = defineOperation({
	mutating: true,
	schema: z.object({ userkey: id, email: optionalEmail, useraccountid: optionalId, referrercode: referrerCode }),
	async handle(ctx, input) {
		const { env, app } = ctx;
		const found = await findUserAndReferrer(env.DB, app.appid, input, input.referrercode);
		if (!found?.user) throw userNotFound();
		const { user, referrer } = found;
		refuseErased(user);
		if (!referrer) throw unknownCode();
		// The checks and the write are the shared attribution's (attribution.ts), as for a promotion code at checkout.
		const outcome = await attributeUserToReferrer(ctx, user, referrer);
		if (outcome.kind === "applied") return { message: "Referrer applied." };
		if (outcome.kind === "erased") throw userErased();
		if (outcome.kind === "own_code") throw new ApiError(400, "own_referrer_code", "A user cannot use their own referral code.");
		if (outcome.kind === "cycle") throw new ApiError(409, "referral_cycle", "That referrer was referred, directly or not, by this user.");
		throw referrerAlreadySet();
	},
});

const referrerAlreadySet = () => new ApiError(409, "referrer_already_set", "This user already has a referrer.");

/** Lets a sign-up form check a code before registering: who it belongs to. */
export const validatereferrercode = defineOperation({
	schema: z.object({ referrercode: referrerCode }),
	async handle({ env, app }, { referrercode }) {
		const owner = await findReferrer(env.DB, app.appid, referrercode);
		if (!owner) throw unknownCode();
		return { message: "Valid referral code.", referrercode: owner.referralcode, name: owner.name ?? "" };
	},
});
