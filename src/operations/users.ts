import { z } from "zod";
import type { App } from "../db/apps";
import type { Network } from "../db/identifiers";
import { updateProfile } from "../db/profile-update";
import { insertRegistration, readRegistrationContext } from "../db/registration";
import { findUser, type Profile, type User } from "../db/users";
import { nowIso } from "../domain/dates";
import { newReferralCode, newUserKey } from "../domain/ids";
import { ipHash } from "../domain/ip";
import type { OutboxEvent } from "../domain/outbox-event";
import { shareUrl } from "../domain/share-url";
import { ApiError, campaignNotFound, refuseErased, userErased, userNotFound } from "../http/errors";
import { id, optionalCampaignId, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import type { FriendRecord } from "../ledger/friends";
import { toFriendRecord } from "../ledger/friends-fill";
import { PROFILE_IDENTIFIERS } from "../ledger/profile";
import { ledgerFor } from "../ledger/stub";
import { sendOutboxEvents, webhookEvent } from "../outbox/events";
import { forgetProfile, rememberParties } from "./conversion-parties";
import { rememberFriend } from "./friend-ledger";
import { networkFields, profileFields, profileOf } from "./schemas";

/** The network fields sent, with the IP address replaced by its keyed hash: the address itself is never kept. */
export async function networkOf(env: Env, input: { deviceid?: string; ipaddress?: string; useragent?: string }): Promise<Network> {
	// A deployment without the secret is a configuration error, not the caller's: the call goes through without the IP.
	if (input.ipaddress && !env.IP_HASH_KEY) console.error("IP_HASH_KEY is not set: the ipaddress sent is not stored");
	return {
		deviceid: input.deviceid,
		iphash: input.ipaddress && env.IP_HASH_KEY ? await ipHash(env.IP_HASH_KEY, input.ipaddress) : undefined,
		useragent: input.useragent,
	};
}

/** The fields every user response shares (register, invokeoutreach). */
export function userSummary(ctx: OperationContext, user: User) {
	return {
		userkey: user.userkey,
		referralcode: user.referralcode,
		shareurl: shareUrl(user.referralcode, user.customdomain, ctx.env.SHARE_BASE_URL, ctx.origin),
		hasreferrer: user.referrerUserid !== null,
		referrercode: user.referrerCode ?? "",
		saascampaignid: String(user.campaignid),
	};
}

/** Public data of a user for webhooks. */
export function userEventData(ctx: OperationContext, user: User) {
	const { userkey, referralcode, shareurl, hasreferrer, referrercode, saascampaignid } = userSummary(ctx, user);
	return {
		userkey,
		email: user.email,
		useraccountid: user.useraccountid,
		name: user.name,
		referralcode,
		shareurl,
		hasreferrer,
		referrercode,
		campaignid: Number(saascampaignid),
		isexistinguser: user.isexistinguser,
	};
}

const unknownReferrerCode = () =>
	new ApiError(404, "referrer_code_not_found", "No user of this app has that referral code.", { statuscode: 0 });

export interface RegisterResult {
	user: User;
	alreadyRegistered: boolean;
}

/**
 * Finds the user registered with the profile's email or account id, or
 * creates one (attributed to the owner of `referrercode` when given). Shared
 * by register and invokeoutreach. An unknown referrer code refuses the call
 * and stores nothing. A new user whose device id another user of the app
 * already has is registered as an existing user (spec: "or device").
 */
export async function findOrRegisterUser(
	ctx: OperationContext,
	sentProfile: Profile,
	referrercode?: string,
	network: Network = {},
	askedCampaignId?: number,
): Promise<RegisterResult> {
	const { env, app } = ctx;
	for (let attempt = 0; attempt < 5; attempt++) {
		let profile = sentProfile;
		// The campaign asked for (it must be the app's), else the app's default: read in the same round trip.
		const campaignAsked = askedCampaignId ?? app.defaultCampaignId;
		const context = await readRegistrationContext(
			env.DB,
			app.appid,
			app.campaignAppid,
			profile,
			referrercode,
			campaignAsked,
			network.deviceid,
		);
		if (context.existing) return { user: context.existing, alreadyRegistered: true };
		if (context.deviceSeen) profile = { ...profile, isexistinguser: true };
		const referrerUser = context.referrer;
		if (referrercode && !referrerUser) throw unknownReferrerCode();
		const defaultCampaign = context.defaultCampaign;
		if (askedCampaignId !== undefined && !defaultCampaign) throw campaignNotFound();
		// A campaign named in the call wins; else a referred user joins its referrer's campaign; else the app's default.
		const campaignid = askedCampaignId ?? referrerUser?.campaignid ?? defaultCampaign?.campaignid;
		if (campaignid === undefined) throw campaignNotFound();

		const userkey = newUserKey();
		const customdomain = referrerUser?.customdomain ?? defaultCampaign?.customdomain ?? "";
		const user = newUserView(app, userkey, campaignid, customdomain, profile, referrerUser);
		const events = registrationEvents(ctx, user, referrerUser);
		const outcome = await insertRegistration(env.DB, {
			appid: app.appid,
			userkey,
			referralcode: user.referralcode,
			campaignid,
			profile,
			referrerUserid: referrerUser?.userid ?? null,
			events,
			network,
			identifiersKept: PROFILE_IDENTIFIERS,
			referrerkey: referrerUser?.userkey ?? null,
			createdAt: user.createdAt,
		});
		if (outcome.inserted) {
			// A referred user's ledger keeps its profile and pointer: its conversions read no D1 (issue 49). Others get no
			// ledger from their registration (a ledger is made by a write that needs one); their first conversion reads D1 once.
			// The referrer's ledger keeps its new friend (its friends page, issue 49): both at once.
			await Promise.all([
				outcome.profile
					? rememberParties(env, app.appid, { stored: outcome.profile, generation: null }, outcome.referrerProfile)
					: undefined,
				referrerUser ? rememberFriend(ctx, referrerUser, registeredFriend(user, outcome.userid)) : undefined,
			]);
			// A concurrent sign-up on the same device may have been stored between the lookup and this batch.
			user.isexistinguser = outcome.isexistinguser;
			if (outcome.recorded.length > 0) ctx.waitUntil(sendOutboxEvents(env, outcome.recorded));
			return { user: { ...user, userid: outcome.userid }, alreadyRegistered: false };
		}
		// Taken meanwhile: a concurrent registration of the same email/account id
		// (the next lookup returns it) or, very rarely, a referral code or userkey collision.
	}
	throw new Error("could not allocate a unique referral code");
}

/** A friend just registered with a referrer's code, as its referrer's ledger keeps it (attribution.ts). */
function registeredFriend(user: User, userid: number): FriendRecord {
	const { userkey, email, useraccountid, name, profileimage, createdAt } = user;
	return { userkey, userid, email, useraccountid, name, profileimage, status: "SignUp", registeredAt: createdAt, attributedAt: createdAt };
}

function newUserView(app: App, userkey: string, campaignid: number, customdomain: string, profile: Profile, referrer: User | null): User {
	const now = nowIso();
	return {
		userid: 0,
		appid: app.appid,
		userkey,
		referralcode: newReferralCode(),
		campaignid,
		email: profile.email ?? null,
		useraccountid: profile.useraccountid ?? null,
		name: profile.name ?? null,
		phone: profile.phone ?? null,
		profileimage: profile.profileimage ?? null,
		city: profile.city ?? null,
		state: profile.state ?? null,
		country: profile.country ?? null,
		paymentcustomerid: profile.paymentcustomerid ?? null,
		usertimezone: profile.usertimezone ?? null,
		extrainfo: profile.extrainfo ?? null,
		isexistinguser: profile.isexistinguser ?? false,
		referrerUserid: referrer?.userid ?? null,
		status: "SignUp",
		friendsCount: 0,
		convertedFriendsCount: 0,
		createdAt: now,
		updatedAt: now,
		referrerCode: referrer?.referralcode ?? null,
		customdomain,
		erasedAt: null,
	};
}

function registrationEvents(ctx: OperationContext, user: User, referrer: User | null): OutboxEvent[] {
	const data = userEventData(ctx, user);
	const events = [webhookEvent(user.appid, "user.registered", { ...data, registeredat: user.createdAt })];
	if (referrer) events.push(webhookEvent(user.appid, "referral.attributed", attributionData(ctx, user, referrer, user.createdAt)));
	return events;
}

/** Payload of `referral.attributed`. */
export function attributionData(ctx: OperationContext, friend: User, referrer: User, attributedat: string) {
	return {
		friend: userEventData(ctx, { ...friend, referrerCode: referrer.referralcode, referrerUserid: referrer.userid }),
		referrer: {
			userkey: referrer.userkey,
			email: referrer.email,
			useraccountid: referrer.useraccountid,
			referralcode: referrer.referralcode,
		},
		campaignid: referrer.campaignid,
		attributedat,
	};
}

/** Operation 5: registers a user, or returns the one already registered with that email / account id. */
export const register = defineOperation({
	mutating: true,
	schema: z.object({ ...profileFields, ...networkFields, referrercode: optionalText(32), campaignid: optionalCampaignId }),
	async handle(ctx, input) {
		const network = await networkOf(ctx.env, input);
		const { user, alreadyRegistered } = await findOrRegisterUser(
			ctx,
			profileOf(input),
			input.referrercode,
			network,
			input.campaignid ?? undefined,
		);
		return {
			message: alreadyRegistered ? "User already registered." : "User registered.",
			...userSummary(ctx, user),
			isexistinguser: alreadyRegistered || user.isexistinguser,
		};
	},
});

/** Operation 6: changes only the fields sent. An erased user is refused (410): its data is not collected again. */
/** The profile fields a conversion reads from the user's ledger (db/user-profile.ts): changing one forgets the profile there. */
const CONVERSION_FIELDS = ["email", "name", "profileimage", "phone", "paymentcustomerid", "isexistinguser"] as const;

/**
 * A vanity referral code (docs/integration.md, "Vanity codes"): 3-32 of A-Z a-z 0-9 _ -, stored upper case like every
 * code, so that codes compare ignoring case (the share link upper-cases what it is given).
 */
const vanityCode = optionalText(32).pipe(
	z
		.string()
		.regex(/^[A-Za-z0-9_-]{3,32}$/, "must be 3-32 characters of A-Z, a-z, 0-9, _ and -")
		.transform((v) => v.toUpperCase())
		.optional(),
);

/** What a friends page shows of a friend (ledger/friends.ts). */
const SHOWN_FIELDS = ["email", "useraccountid", "name", "profileimage"] as const;

export const updateuser = defineOperation({
	mutating: true,
	schema: z.object({ userkey: id, ...profileFields, ...networkFields, referralcode: vanityCode }),
	async handle({ env, app, waitUntil }, input) {
		const network = await networkOf(env, input);
		const profile = profileOf(input);
		const outcome = await updateProfile(env.DB, app.appid, input.userkey, profile, network, input.referralcode);
		// What a conversion reads of the user changed: its ledger reads it from D1 again (issue 49, ledger/profile.ts).
		if (outcome.updated && (CONVERSION_FIELDS.some((f) => profile[f] !== undefined) || network.deviceid || network.iphash))
			await forgetProfile(env, app.appid, input.userkey);
		if (outcome.updated && input.paymentcustomerid) {
			// Stripe rewards that waited for a customer id are paid now (through the Stripe queue, not on this request).
			const retry = ledgerFor(env, app.appid, input.userkey).retryPayouts();
			waitUntil(retry.catch((error: unknown) => console.error("updateuser: payout retry failed", error)));
		}
		if (outcome.updated) {
			const { referrerkey, ...friend } = outcome.friend;
			// The referrer's ledger shows these fields on its friends page (issue 49 piece 4): one call, only when one of them was sent.
			if (referrerkey && SHOWN_FIELDS.some((f) => input[f] !== undefined)) {
				await ledgerFor(env, app.appid, referrerkey)
					.rememberFriends(app.appid, referrerkey, [toFriendRecord(friend)], "profile")
					.catch((error: unknown) => console.error("updateuser: the referrer's ledger did not take the new profile", error));
			}
			return { message: "User updated." };
		}
		if (outcome.erased) throw userErased();
		if (!outcome.found) throw userNotFound();
		if (outcome.emailTaken) throw new ApiError(409, "email_taken", "Another user of this app has that email.");
		if (outcome.accountTaken) throw new ApiError(409, "useraccountid_taken", "Another user of this app has that useraccountid.");
		if (outcome.codeTaken) {
			throw new ApiError(409, "referralcode_taken", "referralcode: another user has that code (codes are compared ignoring case).", {
				fields: ["referralcode"],
			});
		}
		throw new Error("updateuser changed nothing for an unexplained reason");
	},
});

/** Looks a live user up, or fails with 404 user_not_found (410 user_erased for an erased one). */
export async function requireUser(ctx: OperationContext, ref: { userkey?: string; email?: string; useraccountid?: string }): Promise<User> {
	const user = await findUser(ctx.env.DB, ctx.app.appid, ref);
	if (!user) throw userNotFound();
	refuseErased(user);
	return user;
}
