import { z } from "zod";
import type { PasswordRecord } from "./members";

/**
 * Password resets (migration 0020): one use, valid 1 hour, only the SHA-256
 * of the token kept. Using one sets the password, ends every dashboard
 * session of the person and every other open reset, in one batch.
 */

/**
 * Inserts the reset unless the person already has `cap` resets still
 * unexpired at `now` (a reset's `expires_at` is its making time + its 1 hour,
 * so those are the ones made in the last hour): true when inserted. One statement, so concurrent
 * requests cannot pass the cap together. The count is a range of
 * password_resets_person_expiry (migration 0041): at most `cap` entries.
 */
export async function insertPasswordReset(
	db: D1Database,
	reset: { tokenHash: string; personid: string; expiresAt: number },
	limit: { cap: number; now: number },
): Promise<boolean> {
	const result = await db
		.prepare(
			`INSERT INTO password_resets (token_hash, personid, expires_at)
			 SELECT ?1, ?2, ?3 WHERE (SELECT COUNT(*) FROM password_resets WHERE personid = ?2 AND expires_at > ?4) < ?5`,
		)
		.bind(reset.tokenHash, reset.personid, reset.expiresAt, limit.now, limit.cap)
		.run();
	return (result.meta.changes ?? 0) > 0;
}

const openReset = z.object({ personid: z.string(), email: z.string() });

/** The open reset with this token hash (unused, not expired at `now` epoch ms), with its person's email. */
export async function findPasswordReset(db: D1Database, tokenHash: string, now: number): Promise<z.output<typeof openReset> | null> {
	const row = await db
		.prepare(
			`SELECT r.personid, p.email FROM password_resets r JOIN people p ON p.personid = r.personid
			 WHERE r.token_hash = ? AND r.used_at IS NULL AND r.expires_at > ?`,
		)
		.bind(tokenHash, now)
		.first();
	return row ? openReset.parse(row) : null;
}

/** Uses the reset (once: the first of two concurrent uses wins); true when this call did and the password is set. */
export async function usePasswordReset(db: D1Database, tokenHash: string, now: number, password: PasswordRecord): Promise<boolean> {
	const at = new Date(now).toISOString();
	const personOf = "SELECT personid FROM password_resets WHERE token_hash = ? AND used_at = ?";
	const [used] = await db.batch([
		db
			.prepare("UPDATE password_resets SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?")
			.bind(at, tokenHash, now),
		db
			.prepare(`UPDATE people SET password_hash = ?, password_salt = ?, password_iterations = ? WHERE personid = (${personOf})`)
			.bind(password.hash, password.salt, password.iterations, tokenHash, at),
		// Every session of the person ends: whoever knew the old password is out.
		db.prepare(`DELETE FROM admin_sessions WHERE personid = (${personOf})`).bind(tokenHash, at),
		db.prepare(`UPDATE password_resets SET used_at = ? WHERE personid = (${personOf}) AND used_at IS NULL`).bind(at, tokenHash, at),
	]);
	return (used?.meta.changes ?? 0) > 0;
}

/**
 * Deletes up to `limit` resets expired at `now` (epoch ms), used or not: an
 * expired reset can no longer be used (findPasswordReset, usePasswordReset)
 * and no longer counts against the cap (insertPasswordReset counts those
 * still unexpired), so nothing reads it again. Unexpired ones stay, used
 * ones too: the cap counts them. Bounded: a range of
 * password_resets_expiry (migration 0047) of at most `limit` entries per
 * statement; the scheduled job repeats it until none is left
 * (cleanup.ts, drain). Returns how many went.
 */
export async function purgeExpiredPasswordResets(db: D1Database, now: number, limit: number): Promise<number> {
	const result = await db
		.prepare("DELETE FROM password_resets WHERE token_hash IN (SELECT token_hash FROM password_resets WHERE expires_at <= ? LIMIT ?)")
		.bind(now, limit)
		.run();
	return result.meta.changes ?? 0;
}
