import type { OutboxEvent } from "../domain/outbox-event";
import { deviceSeenLookup, existingFlagLookup, markExistingIfDeviceSeen, type Network, networkWrites } from "./identifiers";
import { allOf, appHasWebhook, insertOutboxEvent } from "./outbox-events";
import { firstRowOf } from "./rows";
import { signupCounters } from "./stats";
import { type StoredProfile, storedProfileStatements, toStoredProfile } from "./user-profile";
import {
	countNewFriend,
	existingUserLookup,
	insertUser,
	type NewUser,
	type Profile,
	referrerLookup,
	toUser,
	type User,
	type UserRow,
} from "./users";

/**
 * The two round trips of a registration (register, invokeoutreach): what
 * deciding it needs, then the guarded insert with everything that goes with
 * it, in one batch.
 */

export interface RegistrationContext {
	/** The user already registered with the email or account id, if any. */
	existing: User | null;
	/** The owner of the referral code sent; null when none was sent or nobody has it. */
	referrer: User | null;
	/** The app's default campaign, if it is still the app's. */
	defaultCampaign: { campaignid: number; customdomain: string } | null;
	/** A user of the app was already registered with the device id sent. */
	deviceSeen: boolean;
}

/** Reads what deciding a registration needs, in one round trip. */
export async function readRegistrationContext(
	db: D1Database,
	appid: string,
	/** App.campaignAppid: a test twin's default campaign is its live app's. */
	campaignAppid: string,
	profile: Pick<Profile, "email" | "useraccountid">,
	referrercode: string | undefined,
	defaultCampaignId: number | null,
	deviceid: string | undefined,
): Promise<RegistrationContext> {
	const [existing, referrer, campaign, device] = await db.batch([
		existingUserLookup(db, appid, profile.email, profile.useraccountid),
		referrercode ? referrerLookup(db, appid, referrercode) : db.prepare("SELECT NULL WHERE 0"),
		db.prepare("SELECT campaignid, customdomain FROM campaigns WHERE campaignid = ? AND appid = ?").bind(defaultCampaignId, campaignAppid),
		deviceSeenLookup(db, appid, deviceid),
	]);
	const existingRow = firstRowOf<UserRow>(existing);
	const referrerRow = firstRowOf<UserRow>(referrer);
	return {
		existing: existingRow ? toUser(existingRow) : null,
		referrer: referrerRow ? toUser(referrerRow) : null,
		defaultCampaign: firstRowOf<{ campaignid: number; customdomain: string }>(campaign) ?? null,
		deviceSeen: firstRowOf<{ seen: number }>(device)?.seen === 1,
	};
}

export interface Registration extends NewUser {
	/** Device ids and IP hashes the profile read back keeps per kind (ledger/profile.ts PROFILE_IDENTIFIERS). */
	identifiersKept: number;
	/** The referrer's key (with referrerUserid): its profile is read back too, for its ledger. */
	referrerkey: string | null;
	/** Webhook events of the registration, recorded only if the user is inserted and the app has a webhook URL. */
	events: OutboxEvent[];
	network: Network;
}

export type RegistrationOutcome =
	| { inserted: false }
	| {
			inserted: true;
			userid: number;
			/** As stored at the end of the batch (a concurrent sign-up on the same device may have set it). */
			isexistinguser: boolean;
			/** The events this batch recorded. */
			recorded: OutboxEvent[];
			/** A referred user and its referrer as the batch left them (db/user-profile.ts): their ledgers keep them (issue 49). */
			profile: StoredProfile | null;
			referrerProfile: StoredProfile | null;
	  };

/**
 * Inserts the user unless its email, account id, referral code or userkey is
 * taken, in one batch (a transaction) with the referrer's friend count, the
 * events, the sign-up counters, the device re-check, the network and (a
 * referred user) its profile read back (issue 49). When
 * the insert did not happen, nothing else does.
 */
export async function insertRegistration(db: D1Database, registration: Registration): Promise<RegistrationOutcome> {
	const { appid, userkey, referrerUserid, events, network } = registration;
	// Recorded only if the user was inserted and the app has a webhook URL (an app without one gets no webhook events).
	const inserted = allOf({ sql: "EXISTS (SELECT 1 FROM users WHERE userkey = ?)", args: [userkey] }, appHasWebhook(appid));
	const friendCounted = referrerUserid !== null ? 1 : 0;
	const referred = referrerUserid !== null ? registration.referrerkey : null;
	const results = await db.batch([
		insertUser(db, {
			appid,
			userkey,
			referralcode: registration.referralcode,
			campaignid: registration.campaignid,
			profile: registration.profile,
			referrerUserid,
			...(registration.createdAt ? { createdAt: registration.createdAt } : {}),
		}),
		...(referrerUserid !== null ? [countNewFriend(db, referrerUserid, userkey)] : []),
		...events.map((event) => insertOutboxEvent(db, event, inserted)),
		signupCounters(db, userkey),
		...(network.deviceid ? [markExistingIfDeviceSeen(db, appid, userkey, network.deviceid)] : []),
		...networkWrites(db, appid, userkey, network),
		// A referred user's profile, read back for its ledger (issue 49): the conversions that reward read it there.
		...(referred ? storedProfileStatements(db, appid, userkey, registration.identifiersKept) : []),
		...(referred ? storedProfileStatements(db, appid, referred, registration.identifiersKept) : []),
		existingFlagLookup(db, userkey),
	]);
	const insert = results[0];
	if (insert?.meta.changes !== 1) return { inserted: false };
	return {
		inserted: true,
		userid: insert.meta.last_row_id,
		isexistinguser: firstRowOf<{ isexistinguser: number }>(results.at(-1))?.isexistinguser === 1,
		recorded: events.filter((_, i) => results[1 + friendCounted + i]?.meta.changes === 1),
		profile: referred ? toStoredProfile(results.slice(-7, -4), registration.identifiersKept) : null,
		referrerProfile: referred ? toStoredProfile(results.slice(-4, -1), registration.identifiersKept) : null,
	};
}
