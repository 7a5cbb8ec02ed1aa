import type { StoredEvent } from "../db/events";
import type { User } from "../db/users";
import { customIdToken } from "../domain/ids";
import type { FriendRecord } from "../ledger/friends";
import { ledgerFor } from "../ledger/stub";
import type { ConversionAnnouncement, GrantResult } from "../ledger/types";
import type { OwnedGrant } from "../rewards/rules";

/**
 * Hands an event's decision to the ledgers of its friend and its referrer,
 * with the `conversion.recorded` webhook (its id fixed per event, so a retry
 * records it once). When both sides have rewards, ONE call to the friend's
 * ledger grants them: it starts the referrer's grant, writes its own
 * meanwhile, and queues the webhook with both sides' reward ids once the
 * referrer's ledger answered (ledger/conversion-grant.ts), so the two grants
 * run in parallel. The same call tells a referrer without rewards that its
 * friend converted. When only the referrer has rewards, its ledger grants and
 * announces alone, and no ledger is created for a friend who gets nothing;
 * otherwise the friend's ledger does (an event without rewards still
 * announces itself).
 */
export async function grantConversion(
	env: Env,
	appid: string,
	conversion: {
		event: StoredEvent & { productid?: string | null; category?: string | null };
		user: Pick<User, "userkey" | "userid" | "email" | "useraccountid" | "name" | "profileimage" | "createdAt"> & {
			convertedTold?: boolean;
		};
		referrer: Pick<User, "userkey"> | null;
		/** The event's referrer, erased since (conversion-work.ts): `referrer` is null, and it earns nothing new. */
		erasedReferrer?: string | null;
		decision: OwnedGrant[];
		rewardemail: boolean;
		webhooks: boolean;
	},
): Promise<{ friend: GrantResult["rewards"]; referrer: GrantResult["rewards"] }> {
	const { event, user, referrer, decision, rewardemail, webhooks } = conversion;
	// The email setting as it is now (not frozen with the decision): a campaign switched off stops its emails. So the
	// webhook endpoint: an app without one when the event happens gets no `reward.created` entry (docs/webhooks.md).
	const pick = (owner: "friend" | "referrer") =>
		decision.filter((g) => g.owner === owner).map((g) => ({ ...g.grant, rewardemail, ...(webhooks ? {} : { webhooks: false }) }));
	const friendGrants = pick("friend");
	const referrerGrants = referrer ? pick("referrer") : [];
	const announcement: ConversionAnnouncement = {
		eventid: `evt_conversion_${appid}_${customIdToken(event.customid)}`,
		payload: {
			customid: event.customid,
			eventname: event.eventname,
			userkey: user.userkey,
			referrerkey: referrer?.userkey ?? null,
			transactionvalue: event.transactionvalue,
			extrainfo: event.extrainfo ?? "",
			campaignid: event.campaignid,
			growthhack: event.growthhack,
			recordedat: event.createdAt,
			// What was bought, only for events that name it (docs/webhooks.md): D1's copy of the event takes it from here.
			...(event.productid ? { productid: event.productid } : {}),
			...(event.category ? { category: event.category } : {}),
		},
		otherRewards: [],
	};
	const friendLedger = ledgerFor(env, appid, user.userkey);
	const converted = convertingFriend(user, referrer, event.eventname);
	if (referrer && referrerGrants.length > 0 && friendGrants.length === 0) {
		// Only the referrer has rewards: its ledger grants, marks the friend and announces alone; the friend's profile
		// then keeps that it was told (a call of its own: the friend's ledger has no other call in this event).
		const mine = await ledgerFor(env, appid, referrer.userkey).grant(
			appid,
			referrer.userkey,
			referrerGrants,
			announcement,
			false,
			converted,
		);
		if (converted)
			await friendLedger
				.changeProfile(appid, user.userkey, { kind: "converted" })
				.catch((error) => console.error("keeping that the referrer was told failed (the next conversion tells it again)", String(error)));
		return { friend: [], referrer: mine.rewards };
	}
	if (referrer && (referrerGrants.length > 0 || converted)) {
		// ONE call to the friend's ledger: it calls the referrer's (its grant, or only the mark of its friend converted),
		// then writes its own grants with the webhook and, told, keeps that it was told, in one transaction (issue 49).
		const both = await friendLedger.grantWithReferrer(appid, user.userkey, friendGrants, announcement, {
			userkey: referrer.userkey,
			grants: referrerGrants,
			...(converted ? { converted } : {}),
		});
		return { friend: both.friend.rewards, referrer: both.referrer.rewards };
	}
	const erased = conversion.erasedReferrer && friendGrants.length > 0 ? pick("referrer") : [];
	if (conversion.erasedReferrer && erased.length > 0) {
		// A referrer erased since an earlier attempt of this event: its ledger grants nothing new, but hands back the
		// records of what that attempt granted it, which its friend's ledger keeps (ledger/carried-records.ts).
		const both = await friendLedger.grantWithReferrer(appid, user.userkey, friendGrants, announcement, {
			userkey: conversion.erasedReferrer,
			grants: erased,
			erased: true,
		});
		return { friend: both.friend.rewards, referrer: [] };
	}
	const mine = await friendLedger.grant(appid, user.userkey, friendGrants, announcement);
	return { friend: mine.rewards, referrer: [] };
}

/**
 * The friend as its referrer's ledger keeps it, when this event converts it
 * (issue 49 piece 4, ledger/friends.ts): an event not named Signup, as D1's
 * copy of the event decides (db/events.ts recordedEventStatements). The
 * conversion reads the friend's profile, not D1's status: the profile keeps
 * that the referrer was told (`convertedTold`, set after the first mark), so
 * a friend's later events mark nothing; a mark said twice (a profile read
 * from D1 again) changes nothing.
 */
function convertingFriend(
	user: Pick<User, "userkey" | "userid" | "email" | "useraccountid" | "name" | "profileimage" | "createdAt"> & { convertedTold?: boolean },
	referrer: Pick<User, "userkey"> | null,
	eventname: string,
): FriendRecord | undefined {
	if (!referrer || user.convertedTold || eventname.trim().toLowerCase() === "signup") return undefined;
	const { userkey, userid, email, useraccountid, name, profileimage, createdAt } = user;
	return { userkey, userid, email, useraccountid, name, profileimage, status: "Converted", registeredAt: createdAt, attributedAt: null };
}
