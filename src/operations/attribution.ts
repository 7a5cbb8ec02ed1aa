import { type AttributionOutcome, attributeReferrer } from "../db/referrals";
import type { User } from "../db/users";
import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import type { OperationContext } from "../http/operation";
import { sendOutboxEvents, webhookEvent } from "../outbox/events";
import { attributionData } from "./users";

/**
 * Attributes a known user to a referrer: the one guarded D1 batch of
 * db/referrals.ts (no referrer yet, no cycle, checked and written atomically,
 * with the referrer's friend count and the `referral.attributed` webhook),
 * then the webhook's delivery once it was recorded. Shared by
 * applyreferrercode and the promotion codes of Stripe's checkouts, which map
 * the outcome to their own answers.
 */
export async function attributeToReferrer(ctx: OperationContext, user: User, referrer: User): Promise<AttributionOutcome> {
	const { env, app } = ctx;
	const now = nowIso();
	const event = webhookEvent(
		app.appid,
		"referral.attributed",
		attributionData(ctx, { ...user, campaignid: referrer.campaignid }, referrer, now),
	);
	const outcome = await attributeReferrer(env.DB, {
		appid: app.appid,
		userid: user.userid,
		referrer: { userid: referrer.userid, campaignid: referrer.campaignid },
		attributionId: newEventId(),
		at: now,
		event,
	});
	if (outcome.applied && outcome.recorded) ctx.waitUntil(sendOutboxEvents(env, [event]));
	return outcome;
}
