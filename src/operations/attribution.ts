import { attributeReferrer } from "../db/referrals";
import type { User } from "../db/users";
import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import { isSelfReferral } from "../fraud/self-referral";
import type { OperationContext } from "../http/operation";
import { toFriendRecord } from "../ledger/friends-fill";
import { PROFILE_IDENTIFIERS } from "../ledger/profile";
import { sendOutboxEvents, webhookEvent } from "../outbox/events";
import { forgetProfile, rememberParties } from "./conversion-parties";
import { rememberFriend } from "./friend-ledger";
import { attributionData } from "./users";

/**
 * Attributing a known user to a referrer (issue 47: one shared attribution):
 * the checks and the write that applyreferrercode and the promotion codes of
 * Stripe's payments (integrations/stripe/promotion.ts) both make, answered as
 * a typed outcome each maps to its own answer (a 4xx, a count).
 *
 * - `erased`: the user was erased; nothing is written.
 * - `own_code`: the referrer is the user, or (a payment) pays as the same
 *   Stripe customer as the referrer (fraud/self-referral.ts).
 * - `referrer_kept`: the user has a referrer already (read before, or set by
 *   a concurrent attribution: the first one stays).
 * - `cycle`: the referrer was referred, directly or not, by the user.
 * - `applied`: the one guarded D1 batch of db/referrals.ts (no referrer yet,
 *   no cycle, checked and written atomically, with the referrer's friend
 *   count and the `referral.attributed` webhook), then the webhook's delivery;
 *   the friend's ledger keeps the profile the batch read back (its pointer to
 *   the referrer and the velocity count: issue 49, conversion-parties.ts).
 */
export type AttributionResult =
	| { kind: "applied" }
	| { kind: "erased" }
	| { kind: "own_code" }
	| { kind: "referrer_kept"; current: number | null }
	| { kind: "cycle" };

export async function attributeUserToReferrer(
	ctx: OperationContext,
	user: User,
	referrer: User,
	/** The Stripe customer that paid, when a payment attributes. */
	customer: string | null = null,
): Promise<AttributionResult> {
	if (user.erasedAt !== null) return { kind: "erased" };
	if (referrer.userid === user.userid) return { kind: "own_code" };
	if (customer !== null && isSelfReferral({ customer, userkey: user.userkey }, referrer)) return { kind: "own_code" };
	if (user.referrerUserid !== null) return { kind: "referrer_kept", current: user.referrerUserid };
	const { env, app } = ctx;
	const now = nowIso();
	const event = webhookEvent(
		app.appid,
		"referral.attributed",
		attributionData(ctx, { ...user, campaignid: referrer.campaignid }, referrer, now),
	);
	// The user's ledger forgets its profile first, so a failure between D1's write and the ledger's leaves no
	// profile without its referrer: the next conversion then reads D1 once (issue 49, ledger/profile.ts).
	const profile = await forgetProfile(env, app.appid, user.userkey);
	const outcome = await attributeReferrer(env.DB, {
		appid: app.appid,
		userid: user.userid,
		userkey: user.userkey,
		referrerkey: referrer.userkey,
		identifiersKept: PROFILE_IDENTIFIERS,
		referrer: { userid: referrer.userid, campaignid: referrer.campaignid },
		attributionId: newEventId(),
		at: now,
		event,
	});
	if (outcome.applied) {
		// The friend's ledger keeps its profile and pointer, the referrer's its new friend (issue 49): both at once.
		await Promise.all([
			outcome.profile
				? rememberParties(env, app.appid, { stored: outcome.profile, generation: profile }, outcome.referrerProfile)
				: undefined,
			rememberFriend(ctx, referrer, toFriendRecord(outcome.friend)),
		]);
		if (outcome.recorded) ctx.waitUntil(sendOutboxEvents(env, [event]));
		return { kind: "applied" };
	}
	if (outcome.cycle && outcome.current === null) return { kind: "cycle" };
	return { kind: "referrer_kept", current: outcome.current };
}
