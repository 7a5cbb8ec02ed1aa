import { z } from "zod";
import { getCampaignWithDetails } from "../db/campaigns";
import { recordNetwork } from "../db/identifiers";
import { campaignMessages, rememberLanguage } from "../db/messages";
import { recordOutboxEvent } from "../db/outbox-events";
import { claimReminder } from "../db/reminders";
import { findReferrerAndFriend } from "../db/user-reads";
import { findUser, type User } from "../db/users";
import { nowIso } from "../domain/dates";
import { shareLinkBase } from "../domain/public-origin";
import { emailShareUrl } from "../domain/share-url";
import { ApiError, campaignNotFound, refuseErased, userNotFound } from "../http/errors";
import { optionalEmail, optionalId, optionalPhone, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { brandOf } from "../outbox/branded";
import { mailAction, outreachEmail, reminderEmail, sideReward } from "../outbox/emails";
import { emailEvent, sendOutboxEvents } from "../outbox/events";
import { type Lang, langOfTag } from "../outbox/templates";
import { forgetProfile } from "./conversion-parties";
import { networkFields, profileOf } from "./schemas";
import { findOrRegisterUser, networkOf, userSummary } from "./users";

/** Queues one email event, recorded in D1 first so it survives a failed enqueue. */
async function queueEmail(ctx: OperationContext, event: ReturnType<typeof emailEvent>): Promise<void> {
	await recordOutboxEvent(ctx.env.DB, event);
	ctx.waitUntil(sendOutboxEvents(ctx.env, [event]));
}

/**
 * Keeps the language a call gave for the user, for the emails the service
 * sends without a call (the reward-earned email, docs/messages.md): after
 * the call succeeded (a refused one changes nothing), off its answer's path.
 */
function keepLanguage(ctx: OperationContext, userid: number, lang: Lang): void {
	ctx.waitUntil(
		rememberLanguage(ctx.env.DB, userid, lang).catch((error) => console.warn("language not kept", { userid, error: String(error) })),
	);
}

/** The recipient's language as the product knows it (a BCP 47 tag, docs/messages.md); an unknown one is English. */
const language = optionalText(35);

const noEmail = (message: string) => new ApiError(409, "user_has_no_email", message, { statuscode: 0 });

/**
 * Operation 2: finds the user (by `userkey`, `emailId` or `UserIdInstore`),
 * creating it from the fields sent when new, and queues the outreach email.
 */
export const invokeoutreach = defineOperation({
	mutating: true,
	schema: z
		.object({
			userkey: optionalId,
			email: optionalEmail,
			useraccountid: optionalId,
			name: optionalText(200),
			profileimage: optionalText(2000),
			phone: optionalPhone,
			city: optionalText(100),
			state: optionalText(100),
			country: optionalText(100),
			/** The user's language (en, fr, de, es; fr-CA is fr): the email's language. */
			language,
			...networkFields,
		})
		.refine((v) => v.userkey || v.email || v.useraccountid, {
			message: "send at least one of userkey, emailId, UserIdInstore",
			path: ["userkey"],
		}),
	async handle(ctx, input) {
		const { env, app } = ctx;
		const network = await networkOf(env, input);
		let user: User;
		let alreadyRegistered = true;
		if (input.userkey || !input.email) {
			// Without an email a new user could not be written to: look it up only, so a refusal creates nothing.
			const found = await findUser(env.DB, app.appid, input.userkey ? { userkey: input.userkey } : { useraccountid: input.useraccountid });
			if (!found && input.userkey) throw userNotFound();
			if (!found) throw noEmail("No user with that UserIdInstore, and no emailId to create one with; nothing was created.");
			refuseErased(found);
			user = found;
		} else {
			({ user, alreadyRegistered } = await findOrRegisterUser(ctx, profileOf(input), undefined, network));
		}
		// Checked before anything is recorded: a refused call changes nothing.
		if (!user.email) throw noEmail("The user has no email address to send the outreach to.");
		// A user found (not created) here still gets the device and network the product reports now.
		if (alreadyRegistered && (network.deviceid || network.iphash)) {
			await recordNetwork(env.DB, app.appid, user.userkey, network);
			// Its ledger's profile (issue 49) holds the user's devices and networks: read from D1 again at the next conversion.
			await forgetProfile(env, app.appid, user.userkey);
		} else if (alreadyRegistered) await recordNetwork(env.DB, app.appid, user.userkey, network);
		const lang = langOfTag(input.language);
		// The campaign's own texts are read alongside it (by the campaign id the user holds): no extra round trip of latency.
		const [campaign, templates] = await Promise.all([
			getCampaignWithDetails(env.DB, app.campaignAppid, user.campaignid),
			campaignMessages(env.DB, user.campaignid, "outreach"),
		]);
		if (!campaign) throw campaignNotFound();
		const summary = userSummary(ctx, user);
		await queueEmail(
			ctx,
			emailEvent(
				app.appid,
				"email.outreach",
				outreachEmail({
					to: user.email,
					toName: user.name,
					campaign,
					mailMessage: mailAction(campaign.socialactions)?.sharemessage ?? null,
					// Built from configuration only, never from the request (issue 47).
					shareurl: emailShareUrl(user.referralcode, user.customdomain, shareLinkBase(env)),
					referralcode: user.referralcode,
					lang: lang ?? "en",
					templates,
					brand: brandOf(app, env),
					reward: sideReward(campaign.rewardrules, "Referrer"),
				}),
				app.livemode,
			),
		);
		if (lang) keepLanguage(ctx, user.userid, lang);
		return {
			message: "Outreach email queued.",
			userkey: user.userkey,
			shareurl: summary.shareurl,
			referralcode: user.referralcode,
			isExistingUser: alreadyRegistered || user.isexistinguser,
			hasReferrer: summary.hasreferrer,
			statuscode: 1,
		};
	},
});

/** One reminder per friend per this many milliseconds. */
export const REMINDER_INTERVAL_MS = 24 * 3600 * 1000;

/**
 * Operation 8: queues a reminder to a friend of the referrer. At most one per
 * friend per 24 h (429 beyond), so the endpoint cannot be used to spam.
 */
export const remindfriend = defineOperation({
	mutating: true,
	schema: z
		.object({
			userkey: optionalId,
			email: optionalEmail,
			frienduserkey: optionalId,
			friendemail: optionalEmail,
			messageforfriend: optionalText(1000),
			/** The friend's language (en, fr, de, es): the reminder's language. */
			language,
		})
		.refine((v) => v.userkey || v.email, { message: "send userkey or email of the referrer", path: ["userkey"] })
		.refine((v) => v.frienduserkey || v.friendemail, { message: "send frienduserkey or friendemail", path: ["frienduserkey"] }),
	async handle(ctx, input) {
		const { env, app } = ctx;
		const found = await findReferrerAndFriend(
			env.DB,
			app.appid,
			{ userkey: input.userkey, email: input.email },
			{ userkey: input.frienduserkey, email: input.friendemail },
		);
		if (!found?.referrer) throw userNotFound();
		const { referrer, friend } = found;
		// An erased referrer sends nothing, and an erased friend receives nothing.
		refuseErased(referrer);
		if (friend) refuseErased(friend);
		if (!friend || friend.referrerUserid !== referrer.userid) {
			throw new ApiError(404, "not_a_friend", "That user is not a friend of this referrer.", { statuscode: 0 });
		}
		if (!friend.email) throw new ApiError(409, "friend_has_no_email", "The friend has no email address.");
		const lang = langOfTag(input.language);
		const [campaign, templates] = await Promise.all([
			getCampaignWithDetails(env.DB, app.campaignAppid, friend.campaignid),
			campaignMessages(env.DB, friend.campaignid, "reminder"),
		]);
		if (!campaign) throw campaignNotFound();

		const event = emailEvent(
			app.appid,
			"email.reminder",
			reminderEmail({
				to: friend.email,
				toName: friend.name,
				referrerName: referrer.name,
				campaign,
				message: input.messageforfriend ?? null,
				landingurl: app.landingurl,
				lang: lang ?? "en",
				templates,
				brand: brandOf(app, env),
				shareurl: emailShareUrl(referrer.referralcode, referrer.customdomain, shareLinkBase(env)),
				referralcode: referrer.referralcode,
				reward: sideReward(campaign.rewardrules, "Friend"),
			}),
			app.livemode,
		);
		const cutoff = new Date(Date.now() - REMINDER_INTERVAL_MS).toISOString();
		// The guarded upsert decides atomically whether this call may send; the email is recorded only if it did.
		if (!(await claimReminder(env.DB, friend.userid, event, nowIso(), cutoff))) {
			throw new ApiError(429, "rate_limited", "A reminder was sent to this friend in the last 24 hours.");
		}
		ctx.waitUntil(sendOutboxEvents(env, [event]));
		if (lang) keepLanguage(ctx, friend.userid, lang);
		return { message: "Reminder queued." };
	},
});
