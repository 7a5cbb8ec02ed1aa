import { z } from "zod";
import { findUserAndReferrer } from "../db/user-reads";
import { findReferrer } from "../db/users";
import { ApiError, refuseErased, userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId } from "../http/fields";
import { defineOperation } from "../http/operation";
import { attributeToReferrer } from "./attribution";

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
		if (referrer.userid === user.userid) throw new ApiError(400, "own_referrer_code", "A user cannot use their own referral code.");
		if (user.referrerUserid !== null) throw referrerAlreadySet();

		const outcome = await attributeToReferrer(ctx, user, referrer);
		if (outcome.applied) return { message: "Referrer applied." };
		if (outcome.current !== null && outcome.current !== referrer.userid) throw referrerAlreadySet();
		if (outcome.cycle) throw new ApiError(409, "referral_cycle", "That referrer was referred, directly or not, by this user.");
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
