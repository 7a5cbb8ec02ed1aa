import { z } from "zod";
import { nowIso } from "../domain/dates";
import { type AuditEntry, runAudited } from "./audit";
import { rowsOf } from "./rows";

/** App-scoped admin tokens (migration 0015): the row without its secret, which only exists as a hash. */
export const ROLES = ["viewer", "reviewer", "manager", "owner"] as const;
export type Role = (typeof ROLES)[number];

const tokenRow = z.object({
	tokenid: z.string(),
	appid: z.string(),
	name: z.string(),
	role: z.enum(ROLES),
	created_at: z.string(),
	revoked_at: z.string().nullable(),
});
export type AdminToken = z.output<typeof tokenRow>;

export async function insertAdminToken(
	db: D1Database,
	token: { tokenid: string; appid: string; name: string; role: Role; tokenHash: string },
	audit: AuditEntry,
): Promise<AdminToken> {
	const createdAt = nowIso();
	const insert = db
		.prepare("INSERT INTO admin_tokens (tokenid, appid, name, role, token_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)")
		.bind(token.tokenid, token.appid, token.name, token.role, token.tokenHash, createdAt);
	await runAudited(db, insert, audit);
	return { tokenid: token.tokenid, appid: token.appid, name: token.name, role: token.role, created_at: createdAt, revoked_at: null };
}

/** The live token with this hash (the unique index), or null. */
export async function findAdminToken(db: D1Database, tokenHash: string): Promise<AdminToken | null> {
	const row = await db
		.prepare("SELECT tokenid, appid, name, role, created_at, revoked_at FROM admin_tokens WHERE token_hash = ? AND revoked_at IS NULL")
		.bind(tokenHash)
		.first();
	return row ? tokenRow.parse(row) : null;
}

/** The app's tokens, newest first, revoked ones included (at most `limit`: a range of admin_tokens_app). */
export async function listAdminTokens(db: D1Database, appid: string, limit = 200): Promise<AdminToken[]> {
	const result = await db
		.prepare("SELECT tokenid, appid, name, role, created_at, revoked_at FROM admin_tokens WHERE appid = ? ORDER BY created_at DESC LIMIT ?")
		.bind(appid, limit)
		.all();
	return rowsOf<unknown>(result).map((row) => tokenRow.parse(row));
}

/** Revokes at once; false when the app has no such live token. */
export async function revokeAdminToken(db: D1Database, appid: string, tokenid: string, audit: AuditEntry): Promise<boolean> {
	const revoke = db
		.prepare("UPDATE admin_tokens SET revoked_at = ? WHERE tokenid = ? AND appid = ? AND revoked_at IS NULL")
		.bind(nowIso(), tokenid, appid);
	const result = await runAudited(db, revoke, audit);
	return result.meta.changes > 0;
}
