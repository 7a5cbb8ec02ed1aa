import { z } from "zod";
import type { App } from "../db/apps";
import { deviceSeenLookup, existingFlagLookup, markExistingIfDeviceSeen, type Network, networkWrites } from "../db/identifiers";
import { signupCounters } from "../db/stats";
import {
	countNewFriend,
	existingUserLookup,
	insertUser,
	type Profile,
	referrerLookup,
	toUser,
	type User,
	type UserRow,
	userLookup,
} from "../db/users";
import { nowIso } from "../domain/dates";
import { newReferralCode, newUserKey } from "../domain/ids";
import { ipHash } from "../domain/ip";
import { shareUrl } from "../domain/share-url";
import { ApiError, campaignNotFound, userNotFound } from "../http/errors";
import { id, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { allOf, appHasWebhook, insertOutboxEvent, type OutboxEvent, sendOutboxEvents, webhookEvent } from "../outbox/events";
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
): Promise<RegisterResult> {
	const { env, app } = ctx;
	for (let attempt = 0; attempt < 5; attempt++) {
		let profile = sentProfile;
		const [existing, referrer, campaign, device] = await env.DB.batch<Record<string, unknown>>([
			existingUserLookup(env.DB, app.appid, profile.email, profile.useraccountid),
			referrercode ? referrerLookup(env.DB, app.appid, referrercode) : env.DB.prepare("SELECT NULL WHERE 0"),
			env.DB.prepare("SELECT campaignid, customdomain FROM campaigns WHERE campaignid = ? AND appid = ?").bind(
				app.defaultCampaignId,
				app.appid,
			),
			deviceSeenLookup(env.DB, app.appid, network.deviceid),
		]);
		const existingRow = existing?.results[0] as UserRow | undefined;
		if (existingRow) return { user: toUser(existingRow), alreadyRegistered: true };
		if ((device?.results[0] as { seen: number } | undefined)?.seen === 1) profile = { ...profile, isexistinguser: true };
		const referrerRow = referrer?.results[0] as UserRow | undefined;
		if (referrercode && !referrerRow) throw unknownReferrerCode();
		const referrerUser = referrerRow ? toUser(referrerRow) : null;
		const defaultCampaign = campaign?.results[0] as { campaignid: number; customdomain: string } | undefined;
		const campaignid = referrerUser?.campaignid ?? defaultCampaign?.campaignid;
		if (campaignid === undefined) throw campaignNotFound();

		const userkey = newUserKey();
		const customdomain = referrerUser?.customdomain ?? defaultCampaign?.customdomain ?? "";
		const user = newUserView(app, userkey, campaignid, customdomain, profile, referrerUser);
		const events = registrationEvents(ctx, user, referrerUser);
		// Recorded only if the user was inserted and the app has a webhook URL (an app without one gets no webhook events).
		const inserted = allOf({ sql: "EXISTS (SELECT 1 FROM users WHERE userkey = ?)", args: [userkey] }, appHasWebhook(app.appid));
		const friendCounted = referrerUser ? 1 : 0;
		const results = await env.DB.batch([
			insertUser(env.DB, {
				appid: app.appid,
				userkey,
				referralcode: user.referralcode,
				campaignid,
				profile,
				referrerUserid: referrerUser?.userid ?? null,
			}),
			...(referrerUser ? [countNewFriend(env.DB, referrerUser.userid, userkey)] : []),
			...events.map((event) => insertOutboxEvent(env.DB, event, inserted)),
			signupCounters(env.DB, userkey),
			...(network.deviceid ? [markExistingIfDeviceSeen(env.DB, app.appid, userkey, network.deviceid)] : []),
			...networkWrites(env.DB, app.appid, userkey, network),
			existingFlagLookup(env.DB, userkey),
		]);
		const insert = results[0];
		if (insert?.meta.changes === 1) {
			// A concurrent sign-up on the same device may have been stored between the lookup and this batch.
			const flag = results.at(-1)?.results[0] as { isexistinguser: number } | undefined;
			user.isexistinguser = flag?.isexistinguser === 1;
			const recorded = events.filter((_, i) => results[1 + friendCounted + i]?.meta.changes === 1);
			if (recorded.length > 0) ctx.waitUntil(sendOutboxEvents(env, recorded));
			return { user: { ...user, userid: insert.meta.last_row_id }, alreadyRegistered: false };
		}
		// Taken meanwhile: a concurrent registration of the same email/account id
		// (the next lookup returns it) or, very rarely, a referral code or userkey collision.
	}
	throw new Error("could not allocate a unique referral code");
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
	schema: z.object({ ...profileFields, ...networkFields, referrercode: optionalText(32) }),
	async handle(ctx, input) {
		const network = await networkOf(ctx.env, input);
		const { user, alreadyRegistered } = await findOrRegisterUser(ctx, profileOf(input), input.referrercode, network);
		return {
			message: alreadyRegistered ? "User already registered." : "User registered.",
			...userSummary(ctx, user),
			isexistinguser: alreadyRegistered || user.isexistinguser,
		};
	},
});

/** Operation 6: changes only the fields sent. An erased user is not found: its data is not collected again. */
export const updateuser = defineOperation({
	mutating: true,
	schema: z.object({ userkey: id, ...profileFields, ...networkFields }),
	async handle({ env, app }, input) {
		const network = await networkOf(env, input);
		const profile = profileOf(input);
		const { isexistinguser, ...text } = profile;
		const sets = Object.entries(text).map(([field]) => `${field} = ?`);
		if (isexistinguser !== undefined) sets.push("isexistinguser = ?");
		const values = [...Object.values(text), ...(isexistinguser === undefined ? [] : [isexistinguser ? 1 : 0])];
		const email = text.email ?? null;
		const account = text.useraccountid ?? null;
		const unique = {
			sql: `NOT EXISTS (SELECT 1 FROM users o WHERE o.appid = ? AND o.userkey <> ?
			  AND ((? IS NOT NULL AND o.email = ?) OR (? IS NOT NULL AND o.useraccountid = ?)))`,
			args: [app.appid, input.userkey, email, email, account, account],
		};
		// Guarded UPDATE plus a diagnosis in one transaction: no race between the uniqueness check and the write.
		const [update, diagnosis] = await env.DB.batch([
			env.DB.prepare(
				`UPDATE users SET ${[...sets, "updated_at = ?"].join(", ")} WHERE appid = ? AND userkey = ? AND erased_at IS NULL AND ${unique.sql}`,
			).bind(...values, nowIso(), app.appid, input.userkey, ...unique.args),
			env.DB.prepare(
				`SELECT EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2 AND erased_at IS NULL) AS found,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?3 IS NOT NULL AND email = ?3) AS emailtaken,
				 EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey <> ?2 AND ?4 IS NOT NULL AND useraccountid = ?4) AS accounttaken`,
			).bind(app.appid, input.userkey, email, account),
			...networkWrites(env.DB, app.appid, input.userkey, network, unique),
		]);
		if (update?.meta.changes === 1) return { message: "User updated." };
		const why = diagnosis?.results[0] as { found: number; emailtaken: number; accounttaken: number };
		if (!why.found) throw userNotFound();
		if (why.emailtaken) throw new ApiError(409, "email_taken", "Another user of this app has that email.");
		if (why.accounttaken) throw new ApiError(409, "useraccountid_taken", "Another user of this app has that useraccountid.");
		throw new Error("updateuser changed nothing for an unexplained reason");
	},
});

/** Looks a user up or fails with 404 user_not_found. */
export async function requireUser(ctx: OperationContext, ref: { userkey?: string; email?: string; useraccountid?: string }): Promise<User> {
	const row = await userLookup(ctx.env.DB, ctx.app.appid, ref)?.first<UserRow>();
	if (!row) throw userNotFound();
	return toUser(row);
}
