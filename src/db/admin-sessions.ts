/**
 * Dashboard sessions on the server (migration 0008): a row per signed-in
 * session, keyed by the SHA-256 of its id. The cookie's signature proves the
 * id was issued under the current ADMIN_TOKEN; the row proves it was not
 * signed out since.
 */

/** A session of the superuser (`personid` null) or of a member (migration 0016). */
export async function insertAdminSession(db: D1Database, idhash: string, expiresAt: number, personid: string | null): Promise<void> {
	await db.prepare("INSERT INTO admin_sessions (idhash, expires_at, personid) VALUES (?, ?, ?)").bind(idhash, expiresAt, personid).run();
}

/** The live session's person (null: the superuser's), or undefined when it is gone or expired at `now` (epoch ms). One primary-key read. */
export async function adminSessionLive(db: D1Database, idhash: string, now: number): Promise<{ personid: string | null } | undefined> {
	const row = await db
		.prepare("SELECT personid FROM admin_sessions WHERE idhash = ? AND expires_at > ?")
		.bind(idhash, now)
		.first<{ personid: string | null }>();
	return row ?? undefined;
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
