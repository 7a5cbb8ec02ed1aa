import { z } from "zod";
import { rowsOf } from "./rows";
import { parseStoredJson } from "./stored-json";

/**
 * Passkeys of people (migration 0021, docs/operators.md "Passkeys"): the
 * credential an authenticator made for a person, and the challenges already
 * used. A passkey added or removed is recorded in the audit log of every app
 * the person is an accepted member of, in the same batch as the change.
 */

const passkeyRow = z.object({
	credential_id: z.string(),
	personid: z.string(),
	public_key: z.string(),
	counter: z.number(),
	transports: z.string(),
	name: z.string(),
	created_at: z.string(),
	last_used_at: z.string().nullable(),
});

const transportsSchema = z.array(z.string());

export interface Passkey {
	/** base64url, as the authenticator gave it. */
	credentialId: string;
	personid: string;
	/** base64url of the COSE public key. */
	publicKey: string;
	counter: number;
	transports: string[];
	name: string;
	createdAt: string;
	lastUsedAt: string | null;
}

function toPasskey(raw: unknown): Passkey {
	const row = passkeyRow.parse(raw);
	return {
		credentialId: row.credential_id,
		personid: row.personid,
		publicKey: row.public_key,
		counter: row.counter,
		transports: parseStoredJson("passkeys", "transports", row.transports, transportsSchema),
		name: row.name,
		createdAt: row.created_at,
		lastUsedAt: row.last_used_at,
	};
}

const COLUMNS = "credential_id, personid, public_key, counter, transports, name, created_at, last_used_at";

/** A person's passkeys, oldest first (passkeys_person; a person has few, bounded by 100). */
export async function listPasskeys(db: D1Database, personid: string): Promise<Passkey[]> {
	const result = await db.prepare(`SELECT ${COLUMNS} FROM passkeys WHERE personid = ? ORDER BY created_at LIMIT 100`).bind(personid).all();
	return rowsOf<unknown>(result).map(toPasskey);
}

/** The passkey with this credential id (primary key), or null. */
export async function findPasskey(db: D1Database, credentialId: string): Promise<Passkey | null> {
	const row = await db.prepare(`SELECT ${COLUMNS} FROM passkeys WHERE credential_id = ?`).bind(credentialId).first();
	return row ? toPasskey(row) : null;
}

/** What a passkey change records: its entry id (one per app is derived from it), when, and the client's network. */
export interface PasskeyAudit {
	entryid: string;
	at: string;
	iphash: string | null;
}

/**
 * One entry per app the person is an accepted member of (members_person),
 * as that app's member; written only when the statement just before it in
 * the batch changed a row (`changes()` is the last completed statement's, so
 * it holds for every row of this INSERT ... SELECT).
 */
function passkeyAuditStatement(
	db: D1Database,
	personid: string,
	action: "passkey.add" | "passkey.remove",
	credentialId: string,
	changes: Record<string, { before: unknown; after: unknown }>,
	audit: PasskeyAudit,
): D1PreparedStatement {
	return db
		.prepare(
			`INSERT INTO audit_log (entryid, appid, at, actor_type, actor_id, actor, action, target_type, target_id, changes, iphash)
			 SELECT ?1 || '_' || m.memberid, m.appid, ?2, 'member', m.memberid, p.email, ?3, 'passkey', ?4, ?5, ?6
			 FROM members m JOIN people p ON p.personid = m.personid
			 WHERE m.personid = ?7 AND m.accepted_at IS NOT NULL AND changes() > 0
			 ON CONFLICT (entryid) DO NOTHING`,
		)
		.bind(audit.entryid, audit.at, action, credentialId, JSON.stringify(changes), audit.iphash, personid);
}

/** Stores a newly registered passkey with its audit entries; false when the credential id is already stored (anyone's). */
export async function insertPasskey(db: D1Database, passkey: Omit<Passkey, "lastUsedAt">, audit: PasskeyAudit): Promise<boolean> {
	const [inserted] = await db.batch([
		db
			.prepare(
				`INSERT INTO passkeys (credential_id, personid, public_key, counter, transports, name, created_at)
				 VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING`,
			)
			.bind(
				passkey.credentialId,
				passkey.personid,
				passkey.publicKey,
				passkey.counter,
				JSON.stringify(passkey.transports),
				passkey.name,
				passkey.createdAt,
			),
		passkeyAuditStatement(
			db,
			passkey.personid,
			"passkey.add",
			passkey.credentialId,
			{ name: { before: null, after: passkey.name } },
			audit,
		),
	]);
	return (inserted?.meta.changes ?? 0) > 0;
}

/** Removes one of the person's own passkeys with its audit entries; false when they have no such passkey. */
export async function deletePasskey(
	db: D1Database,
	personid: string,
	credentialId: string,
	name: string,
	audit: PasskeyAudit,
): Promise<boolean> {
	const [deleted] = await db.batch([
		db.prepare("DELETE FROM passkeys WHERE credential_id = ? AND personid = ?").bind(credentialId, personid),
		passkeyAuditStatement(db, personid, "passkey.remove", credentialId, { name: { before: name, after: null } }, audit),
	]);
	return (deleted?.meta.changes ?? 0) > 0;
}

/**
 * Uses `challenge` (valid until `expiresAt`, epoch ms) for a sign-in with the
 * passkey, once: the challenge is recorded as used, and only the call that
 * recorded it advances the counter (from `expectedCounter`, the one the
 * signature was checked against, so of two concurrent uses one wins).
 * True when this call used it.
 */
export async function usePasskey(
	db: D1Database,
	input: { credentialId: string; expectedCounter: number; newCounter: number; challenge: string; expiresAt: number; at: string },
): Promise<boolean> {
	const [used, advanced] = await db.batch([
		db
			.prepare("INSERT INTO passkey_challenges_used (challenge, expires_at) VALUES (?, ?) ON CONFLICT (challenge) DO NOTHING")
			.bind(input.challenge, input.expiresAt),
		db
			.prepare("UPDATE passkeys SET counter = ?, last_used_at = ? WHERE changes() > 0 AND credential_id = ? AND counter = ?")
			.bind(input.newCounter, input.at, input.credentialId, input.expectedCounter),
	]);
	return (used?.meta.changes ?? 0) > 0 && (advanced?.meta.changes ?? 0) > 0;
}

/** Records a registration's challenge as used; false when it was used already. */
export async function useChallenge(db: D1Database, challenge: string, expiresAt: number): Promise<boolean> {
	const result = await db
		.prepare("INSERT INTO passkey_challenges_used (challenge, expires_at) VALUES (?, ?) ON CONFLICT (challenge) DO NOTHING")
		.bind(challenge, expiresAt)
		.run();
	return result.meta.changes > 0;
}

const policyRow = z.object({ required: z.number(), passkeys: z.number() });

/**
 * Whether the person must sign in with a passkey (an accepted member of an
 * app that requires them: members_person, then apps by key) and how many
 * passkeys they have (passkeys_person).
 */
export async function passkeyPolicy(db: D1Database, personid: string): Promise<{ required: boolean; passkeys: number }> {
	const row = await db
		.prepare(
			`SELECT EXISTS (SELECT 1 FROM members m JOIN apps a ON a.appid = m.appid
			   WHERE m.personid = ?1 AND m.accepted_at IS NOT NULL AND a.require_passkeys = 1) AS required,
			 (SELECT COUNT(*) FROM passkeys WHERE personid = ?1) AS passkeys`,
		)
		.bind(personid)
		.first();
	const policy = policyRow.parse(row);
	return { required: policy.required === 1, passkeys: policy.passkeys };
}

/** Deletes used challenges past their expiry (they could not be used again anyway), at most `limit`. Returns how many. */
export async function purgeUsedChallenges(db: D1Database, now: number, limit = 1_000): Promise<number> {
	const result = await db
		.prepare(
			"DELETE FROM passkey_challenges_used WHERE challenge IN (SELECT challenge FROM passkey_challenges_used WHERE expires_at <= ? LIMIT ?)",
		)
		.bind(now, limit)
		.run();
	return result.meta.changes;
}
