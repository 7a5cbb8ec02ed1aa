import type { ImportedPointer, ImportedUser, ImportRow } from "../db/import";
import { type ConversionUser, readStoredProfile, type StoredProfile, sharedIdentifiers } from "../db/user-profile";
import { NO_FACTS, type SignalFacts } from "../fraud/signals";
import { type LedgerProfile, PROFILE_IDENTIFIERS, type ProfileChange } from "../ledger/profile";
import { ledgerFor } from "../ledger/stub";

/**
 * The friend and its referrer of a conversion, with the fraud facts, from
 * their ledgers' profiles (ledger/profile.ts, issue 49 pieces 2 and 3): no
 * D1 round trip when both ledgers keep theirs. A ledger without one (a user
 * written before the upgrade, or one whose profile was forgotten after a
 * change) reads it from D1 once, with the statements the context read ran
 * before (db/user-profile.ts), and keeps it. The referrer's facts come from
 * its own ledger, so they are as fresh as the referrer's own writes; the
 * velocity count is the one fixed at the friend's attribution.
 */

export interface ConversionParties {
	user: ConversionUser;
	referrer: ConversionUser | null;
	facts: SignalFacts;
}

const toLedgerProfile = (stored: StoredProfile): LedgerProfile => ({
	...stored.user,
	referrerkey: stored.referrerkey,
	recentReferrals: stored.recentReferrals,
	devices: stored.devices,
	ips: stored.ips,
});

/** The profile of (app, userkey) from its ledger, else from D1 (then kept in the ledger); null: no such user. */
async function profileOf(env: Env, appid: string, userkey: string): Promise<LedgerProfile | null> {
	const ledger = ledgerFor(env, appid, userkey);
	const read = await ledger.profile();
	if (read.profile) return read.profile;
	const stored = await readStoredProfile(env.DB, appid, userkey, PROFILE_IDENTIFIERS);
	if (!stored) return null;
	const profile = toLedgerProfile(stored);
	// Kept only if nothing changed the user since the ledger answered (profile.ts); if this call fails, the next
	// conversion reads D1 again, never a wrong profile.
	await change(env, appid, userkey, { kind: "fill", profile, generation: read.generation });
	return profile;
}

/** Drops the user's profile (a change of the user in D1 comes, or came): answers the generation to fill it again under. */
export function forgetProfile(env: Env, appid: string, userkey: string): Promise<number | null> {
	return ledgerFor(env, appid, userkey).changeProfile(appid, userkey, { kind: "forget" });
}

/**
 * Keeps the profiles an attribution's or a registration's batch read back: the friend's under the generation
 * `forgetProfile` answered before the batch (an attribution), or as a new user's (`generation` null: a
 * registration); its referrer's unless the referrer's was ever forgotten, so the conversions of its friends
 * read no D1 for it either. A failure is logged, not answered: that ledger then has no profile (or keeps the
 * one it had, which no change has made stale), and the next conversion reads D1 once.
 */
export async function rememberParties(
	env: Env,
	appid: string,
	friend: { stored: StoredProfile; generation: number | null },
	referrer: StoredProfile | null,
): Promise<void> {
	const profile = toLedgerProfile(friend.stored);
	const own: ProfileChange =
		friend.generation === null ? { kind: "registered", profile } : { kind: "fill", profile, generation: friend.generation };
	await Promise.all([
		change(env, appid, profile.userkey, own),
		referrer && change(env, appid, referrer.user.userkey, { kind: "registered", profile: toLedgerProfile(referrer) }),
	]);
}

/** A profile read back by a write's own batch (an import's row): kept unless the user's profile was ever forgotten. */
export function registerProfile(env: Env, appid: string, stored: StoredProfile): Promise<void> {
	return change(env, appid, stored.user.userkey, { kind: "registered", profile: toLedgerProfile(stored) });
}

/** Ledgers written at once by an import: enough to overlap the calls, few enough not to crowd out requests. */
const IMPORT_PARALLEL = 16;

/**
 * An import's referred users (admin/import.ts): each ledger keeps the profile its row inserted, with the referrer and
 * the velocity count its batch read back. An import reports no device or network, so the identifiers are empty.
 */
export async function rememberImported(
	env: Env,
	appid: string,
	rows: ImportRow[],
	imported: { inserted: ImportedUser[]; pointers: ImportedPointer[] },
): Promise<void> {
	const byKey = new Map(imported.pointers.map((p) => [p.userkey, p]));
	const stored = new Map(imported.inserted.map((u) => [u.userkey, u]));
	const profiles = rows.flatMap((row): StoredProfile[] => {
		const pointer = byKey.get(row.userkey);
		const inserted = stored.get(row.userkey);
		if (!pointer || !inserted) return [];
		const { profile } = row;
		const user = {
			userkey: row.userkey,
			email: profile.email ?? null,
			name: profile.name ?? null,
			profileimage: profile.profileimage ?? null,
			phone: profile.phone ?? null,
			paymentcustomerid: profile.paymentcustomerid ?? null,
			isexistinguser: profile.isexistinguser ?? false,
			campaignid: row.campaignid,
			erasedAt: null,
			userid: inserted.userid,
			useraccountid: profile.useraccountid ?? null,
			createdAt: inserted.created_at,
		};
		return [{ user, referrerkey: pointer.referrerkey, recentReferrals: pointer.recent, devices: [], ips: [] }];
	});
	for (let i = 0; i < profiles.length; i += IMPORT_PARALLEL)
		await Promise.all(profiles.slice(i, i + IMPORT_PARALLEL).map((p) => registerProfile(env, appid, p)));
	// Their referrers' ledgers keep theirs too (read from D1 once, here rather than on a conversion's path); logged, not
	// answered, if it fails: the first conversion then reads it.
	const referrers = [...new Set(imported.pointers.map((p) => p.referrerkey))];
	for (let i = 0; i < referrers.length; i += IMPORT_PARALLEL)
		await Promise.all(
			referrers
				.slice(i, i + IMPORT_PARALLEL)
				.map((key) =>
					profileOf(env, appid, key).catch((error) =>
						console.error("an import's referrer profile failed", { appid, key, error: String(error) }),
					),
				),
		);
}

async function change(env: Env, appid: string, userkey: string, profileChange: ProfileChange): Promise<void> {
	try {
		await ledgerFor(env, appid, userkey).changeProfile(appid, userkey, profileChange);
	} catch (error) {
		console.error("keeping a profile in its ledger failed (the next conversion reads D1)", { appid, userkey, error: String(error) });
	}
}

const user = (p: LedgerProfile): ConversionUser => ({
	userkey: p.userkey,
	email: p.email,
	name: p.name,
	profileimage: p.profileimage,
	phone: p.phone,
	paymentcustomerid: p.paymentcustomerid,
	isexistinguser: p.isexistinguser,
	campaignid: p.campaignid,
	erasedAt: p.erasedAt,
	userid: p.userid,
	useraccountid: p.useraccountid,
	createdAt: p.createdAt,
	...(p.convertedTold ? { convertedTold: true } : {}),
});

const overlaps = (a: string[], b: string[]) => a.some((v) => b.includes(v));

/** The parties of a conversion of (app, userkey), or null when the app has no such user. */
export async function conversionParties(env: Env, appid: string, userkey: string): Promise<ConversionParties | null> {
	const friend = await profileOf(env, appid, userkey);
	if (!friend) return null;
	const referrer = friend.referrerkey ? await profileOf(env, appid, friend.referrerkey) : null;
	if (!referrer || friend.isexistinguser || referrer.erasedAt !== null)
		return { user: user(friend), referrer: referrer && user(referrer), facts: NO_FACTS };
	const { devices, ips } = friend;
	const shared =
		devices && ips && referrer.devices && referrer.ips
			? { sharedDevice: overlaps(devices, referrer.devices), sharedNetwork: overlaps(ips, referrer.ips) }
			: // A user with more identifiers than a profile keeps: D1 decides (one indexed read, docs/scaling.md).
				await sharedIdentifiers(env.DB, appid, friend.userkey, referrer.userkey);
	return { user: user(friend), referrer: user(referrer), facts: { ...shared, recentReferrals: friend.recentReferrals } };
}
