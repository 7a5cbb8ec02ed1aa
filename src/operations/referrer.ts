import { z } from "zod";
import { lateAttributionCounter } from "../db/stats";
import { attributionHappened, countNewFriend, referrerLookup, toUser, type UserRow, userLookup } from "../db/users";
import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import { ApiError, userNotFound } from "../http/errors";
import { id, optionalEmail, optionalId } from "../http/fields";
import { defineOperation } from "../http/operation";
import { allOf, appHasWebhook, insertOutboxEvent, sendOutboxEvents, webhookEvent } from "../outbox/events";
import { attributionData } from "./users";

const referrerCode = id.pipe(z.string().max(32, "is too long"));
const unknownCode = () => new ApiError(404, "referrer_code_not_found", "No user of this app has that referral code.", { statuscode: 0 });

/**
 * True inside SQL when making ?1 the referrer of ?2 would close a cycle: ?2
 * is ?1 or one of ?1's referrers, however far up.
 */
const CLOSES_CYCLE = `EXISTS (
	WITH RECURSIVE chain(id, depth) AS (
		SELECT ?1, 0
		UNION ALL
		SELECT u.referrer_userid, chain.depth + 1 FROM users u JOIN chain ON u.userid = chain.id
		WHERE u.referrer_userid IS NOT NULL AND chain.depth < 100000
	) SELECT 1 FROM chain WHERE id = ?2)`;

/** Operation 10: sets the user's referrer, once. */
export const applyreferrercode = defineOperation({
	mutating: true,
	schema: z.object({ userkey: id, email: optionalEmail, useraccountid: optionalId, referrercode: referrerCode }),
	async handle(ctx, input) {
		const { env, app } = ctx;
		const lookup = userLookup(env.DB, app.appid, input);
		if (!lookup) throw userNotFound();
		const [userResult, referrerResult] = await env.DB.batch([lookup, referrerLookup(env.DB, app.appid, input.referrercode)]);
		const userRow = userResult?.results[0] as UserRow | undefined;
		if (!userRow) throw userNotFound();
		const referrerRow = referrerResult?.results[0] as UserRow | undefined;
		if (!referrerRow) throw unknownCode();
		const user = toUser(userRow);
		const referrer = toUser(referrerRow);
		if (referrer.userid === user.userid) throw new ApiError(400, "own_referrer_code", "A user cannot use their own referral code.");
		if (user.referrerUserid !== null) throw referrerAlreadySet();

		const attributionId = newEventId();
		const now = nowIso();
		const event = webhookEvent(
			app.appid,
			"referral.attributed",
			attributionData(ctx, { ...user, campaignid: referrer.campaignid }, referrer, now),
		);
		// One guarded UPDATE decides: no referrer yet and no cycle, checked and written atomically.
		const [update, , recorded, diagnosis] = await env.DB.batch([
			env.DB.prepare(
				`UPDATE users SET referrer_userid = ?1, campaignid = ?3, attributed_at = ?4, attribution_id = ?5, updated_at = ?4
				 WHERE userid = ?2 AND referrer_userid IS NULL AND NOT ${CLOSES_CYCLE}`,
			).bind(referrer.userid, user.userid, referrer.campaignid, now, attributionId),
			countNewFriend(env.DB, referrer.userid, attributionId),
			insertOutboxEvent(env.DB, event, allOf(attributionHappened(attributionId), appHasWebhook(app.appid))),
			env.DB.prepare(`SELECT (SELECT referrer_userid FROM users WHERE userid = ?2) AS current, ${CLOSES_CYCLE} AS cycle`).bind(
				referrer.userid,
				user.userid,
			),
			lateAttributionCounter(env.DB, attributionId),
		]);
		if (update?.meta.changes === 1) {
			if (recorded?.meta.changes === 1) ctx.waitUntil(sendOutboxEvents(env, [event]));
			return { message: "Referrer applied." };
		}
		const why = diagnosis?.results[0] as { current: number | null; cycle: number };
		if (why.current !== null && why.current !== referrer.userid) throw referrerAlreadySet();
		if (why.cycle) throw new ApiError(409, "referral_cycle", "That referrer was referred, directly or not, by this user.");
		throw referrerAlreadySet();
	},
});

const referrerAlreadySet = () => new ApiError(409, "referrer_already_set", "This user already has a referrer.");

/** Lets a sign-up form check a code before registering: who it belongs to. */
export const validatereferrercode = defineOperation({
	schema: z.object({ referrercode: referrerCode }),
	async handle({ env, app }, { referrercode }) {
		const row = await referrerLookup(env.DB, app.appid, referrercode).first<UserRow>();
		if (!row) throw unknownCode();
		return { message: "Valid referral code.", referrercode: row.referralcode, name: row.name ?? "" };
	},
});
