import { z } from "zod";
import { id, optionalEmail, optionalId } from "../http/fields";
import { defineOperation } from "../http/operation";
import { SHARE_PAGE_TTL_SECONDS, signSharePageUrl } from "../sharepage/signature";
import { requireUser } from "./users";

/**
 * `getsharepage`: a signed link, valid one hour, to the user's hosted referral
 * page. The product's back end asks for it and shows it to its signed-in user
 * (opened directly or framed with widget.js).
 */
export const getsharepage = defineOperation({
	schema: z.object({ userkey: id, email: optionalEmail, useraccountid: optionalId }),
	async handle(ctx, input) {
		const user = await requireUser(ctx, input);
		const exp = Math.floor(Date.now() / 1000) + SHARE_PAGE_TTL_SECONDS;
		const base = ctx.env.SHARE_BASE_URL || ctx.origin;
		const url = await signSharePageUrl(base, ctx.app.privatekeyHash, ctx.app.appid, user.userkey, exp);
		return { message: "Share page link created.", url, expiresat: new Date(exp * 1000).toISOString() };
	},
});
