import { z } from "zod";
import { erasedAt } from "./privacy";
import { readLedgerJson } from "./stored-json";

/**
 * The user's profile as its own ledger keeps it (ledger schema step 14,
 * issue 49 pieces 2 and 3, docs/scaling.md "Conversions without D1"): what a
 * conversion's decision reads of the user, so it reads no D1. The facts the
 * fraud checks compare (canonical email is computed from `email`, phone,
 * payment customer, device ids and IP hashes), `isexistinguser`, the
 * campaign, and the pointer to the referrer (its userkey) with the velocity
 * count fixed at the attribution. The referrer's facts are read from the
 * referrer's OWN ledger at the conversion (not copied here), so a referrer
 * that changes its phone, reports a new device or is erased is seen at once.
 *
 * One row, with a generation: every change of the user in D1 that the
 * profile copies bumps it after D1's write (a registration writes the whole
 * profile, an attribution forgets it and fills it again from its batch, the
 * other writers forget it), and a
 * profile read from D1 by a conversion (a ledger written before this step,
 * or after a forget) is kept only if the generation it was read under is
 * still the current one: a read that raced a write is dropped, never kept.
 */

/** At most this many device ids and IP hashes each are kept; a user with more has `null` (the shared check then reads D1). */
export const PROFILE_IDENTIFIERS = 20;

export const ledgerProfileSchema = z.object({
	userkey: z.string(),
	email: z.string().nullable(),
	name: z.string().nullable(),
	profileimage: z.string().nullable(),
	phone: z.string().nullable(),
	paymentcustomerid: z.string().nullable(),
	isexistinguser: z.boolean(),
	campaignid: z.number(),
	erasedAt: z.string().nullable(),
	/** D1's userid, account id and registration time: what the referrer's ledger keeps of a converting friend (friends.ts). */
	userid: z.number(),
	useraccountid: z.string().nullable(),
	createdAt: z.string(),
	/** The referrer's userkey; null: no referrer. */
	referrerkey: z.string().nullable(),
	/** The referrer's friends attributed in the hour up to this user's attribution, this user included (docs/fraud.md `velocity`). */
	recentReferrals: z.number(),
	/** The user's device ids and IP hashes (user_identifiers); null: more than PROFILE_IDENTIFIERS of the kind. */
	devices: z.array(z.string()).nullable(),
	ips: z.array(z.string()).nullable(),
	/** The referrer's ledger was told this user converted (its friends page): set by the `converted` change. */
	convertedTold: z.boolean().optional(),
});
export type LedgerProfile = z.output<typeof ledgerProfileSchema>;

/** What the ledger answers: its profile (null: none kept) and the generation a profile read from D1 must be kept under. */
export interface ProfileRead {
	profile: LedgerProfile | null;
	generation: number;
}

/** A change of the profile (UserLedger.changeProfile). */
export type ProfileChange =
	/** A profile read from D1 while the generation was `generation`: kept only if it still is. */
	| { kind: "fill"; profile: LedgerProfile; generation: number }
	/**
	 * A profile read back by a write's own D1 batch (a referred registration, an import, the referrer of an
	 * attribution): kept unless the profile was ever forgotten (generation 0), so no change it missed can be lost.
	 */
	| { kind: "registered"; profile: LedgerProfile }
	/**
	 * The user changes (or changed) in D1: the profile is dropped and read from D1 again. An attribution forgets
	 * before its D1 write, then fills with what its batch read back under the generation answered here: if that
	 * fill fails, the ledger has no profile (a D1 read later), never one without its referrer.
	 */
	| { kind: "forget" }
	/**
	 * The referrer's ledger was told this user converted (operations/conversion-grants.ts): kept in the profile, under
	 * its generation, so no later conversion says it again; nothing without a profile (the next read from D1 starts
	 * over, and says it once more, which changes nothing).
	 */
	| { kind: "converted" };

type ProfileRow = { generation: number; body: string | null };

function row(sql: SqlStorage): ProfileRow | null {
	return sql.exec<ProfileRow>("SELECT generation, body FROM profile WHERE one = 1").toArray()[0] ?? null;
}

/** An erased user's profile: the ledger's own erasure mark decides (privacy.ts), and nothing personal is answered. */
function asErased(profile: LedgerProfile, at: string): LedgerProfile {
	return {
		...profile,
		email: null,
		name: null,
		profileimage: null,
		useraccountid: null,
		phone: null,
		paymentcustomerid: null,
		erasedAt: at,
		devices: [],
		ips: [],
	};
}

/** The profile kept, with the generation (read in the caller's transaction or alone: one statement). */
export function readProfile(sql: SqlStorage): ProfileRead {
	const current = row(sql);
	if (!current?.body) return { profile: null, generation: current?.generation ?? 0 };
	const profile = readLedgerJson("profile", "body", current.body, ledgerProfileSchema);
	const erased = erasedAt(sql);
	return { profile: erased === null ? profile : asErased(profile, erased), generation: current.generation };
}

function store(sql: SqlStorage, generation: number, profile: LedgerProfile | null): void {
	sql.exec(
		`INSERT INTO profile (one, generation, body) VALUES (1, ?1, ?2)
		 ON CONFLICT (one) DO UPDATE SET generation = excluded.generation, body = excluded.body`,
		generation,
		profile === null ? null : JSON.stringify(profile),
	);
}

/** Applies `change` in the caller's transaction; answers the generation the profile is now at, or null for a fill refused. */
export function changeProfile(sql: SqlStorage, change: ProfileChange): number | null {
	const generation = row(sql)?.generation ?? 0;
	switch (change.kind) {
		case "fill":
			if (change.generation !== generation) return null;
			store(sql, generation, change.profile);
			return generation;
		case "registered":
			if (generation !== 0) return null;
			store(sql, 1, change.profile);
			return 1;
		case "converted": {
			const current = row(sql);
			if (!current?.body) return null;
			store(sql, generation, { ...readLedgerJson("profile", "body", current.body, ledgerProfileSchema), convertedTold: true });
			return generation;
		}
		case "forget":
			store(sql, generation + 1, null);
			return generation + 1;
	}
}
