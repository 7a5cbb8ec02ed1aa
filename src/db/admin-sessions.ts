/**
 * Dashboard sessions on the server (migration 0008): a row per signed-in
 * session, keyed by the SHA-256 of its id. The cookie's signature proves the
 * id was issued under the current ADMIN_TOKEN; the row proves it was not
 * signed out since.
 */

/** How a session was signed in (migration 0021): the admin token, a member's password, or a member's passkey. */
export type SignInMethod = "token" | "password" | "passkey";

/** A session of the superuser (`personid` null) or of a member (migration 0016), signed in by `method`. */
export async function insertAdminSession(
	db: D1Database,
	idhash: string,
	expiresAt: number,
	personid: string | null,
	method: SignInMethod,
): Promise<void> {
	await db
		.prepare("INSERT INTO admin_sessions (idhash, expires_at, personid, method) VALUES (?, ?, ?, ?)")
		.bind(idhash, expiresAt, personid, method)
		.run();
}

export interface LiveSession {
	/** null: the superuser's. */
	personid: string | null;
	/**
	 * A member's session signed in without a passkey while the person is an
	 * accepted member of an app that requires passkeys (docs/operators.md): it
	 * may only register the person's first passkey.
	 */
	passkeyNeeded: boolean;
}

/**
 * The live session, or undefined when it is gone or expired at `now` (epoch
 * ms). One primary-key read; the passkey requirement is looked up (members_person,
 * apps by key) only for a member's session not signed in with a passkey.
 */
export async function adminSessionLive(db: D1Database, idhash: string, now: number): Promise<LiveSession | undefined> {
	const row = await db
		.prepare(
			`SELECT s.personid,
			   CASE WHEN s.personid IS NULL OR s.method = 'passkey' THEN 0 ELSE EXISTS (
			     SELECT 1 FROM members m JOIN apps a ON a.appid = m.appid
			     WHERE m.personid = s.personid AND m.accepted_at IS NOT NULL AND a.require_passkeys = 1) END AS passkey_needed
			 FROM admin_sessions s WHERE s.idhash = ? AND s.expires_at > ?`,
		)
		.bind(idhash, now)
		.first<{ personid: string | null; passkey_needed: number }>();
	return row ? { personid: row.personid, passkeyNeeded: row.passkey_needed === 1 } : undefined;
}

/** A password session that registered the person's first passkey counts as signed in with it from now on. */
export async function markSessionPasskey(db: D1Database, idhash: string): Promise<void> {
	await db.prepare("UPDATE admin_sessions SET method = 'passkey' WHERE idhash = ?").bind(idhash).run();
}

/** Signs the session out: its cookie is refused from now on. */
export async function deleteAdminSession(db: D1Database, idhash: string): Promise<void> {
	await db.prepare("DELETE FROM admin_sessions WHERE idhash = ?").bind(idhash).run();
}

/** Deletes sessions expired at `now`; at most `limit` per call, so one run never holds D1 long. Returns how many. */
export async function purgeExpiredAdminSessions(db: D1Database, now: number, limit = 1_000): Promise<number> {
	const result = await db
		.prepare("DELETE FROM admin_sessions WHERE idhash IN (SELECT idhash FROM admin_sessions WHERE expires_at <= ? LIMIT ?)")
		.bind(now, limit)
		.run();
	return result.meta.changes;
}
