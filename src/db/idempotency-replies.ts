import { randomString } from "../domain/ids";

/**
 * The `idempotency_keys` table: per app and Idempotency-Key, the request that
 * holds the key and, once it finished, its stored reply (status and body,
 * replayed byte for byte: http/idempotency-key.ts).
 */

/** The stored state of one Idempotency-Key of an app. */
export interface IdempotencyRow {
	operation: string;
	fingerprint: string;
	state: "running" | "done";
	token: string;
	locked_until: number;
	status: number | null;
	body: string | null;
}

export interface KeyClaim {
	appid: string;
	key: string;
	operation: string;
	fingerprint: string;
}

/** How long a key is kept after its first use (the IETF draft and Stripe: at least 24 h). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * Claims the key for one request, in one D1 round trip. A new key (or one
 * past its expiry) is taken; so is a key still `running` past `locked_until`
 * with the same operation and fingerprint: its request died, and its retry
 * takes over. Answers whether this request holds the key, and the stored row.
 */
export async function claimKey(db: D1Database, claim: KeyClaim, lockMs: number, nowMs = Date.now()) {
	const token = randomString(20, "0123456789abcdefghijklmnopqrstuvwxyz");
	const now = new Date(nowMs).toISOString();
	// The insert selects nothing: the batch's one row shape is the read's.
	const [, read] = await db.batch<IdempotencyRow>([
		db
			.prepare(
				`INSERT INTO idempotency_keys (appid, idempotency_key, operation, fingerprint, state, token, locked_until, created_at, expires_at)
				 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8)
				 ON CONFLICT (appid, idempotency_key) DO UPDATE SET operation = excluded.operation, fingerprint = excluded.fingerprint,
				   state = 'running', token = excluded.token, locked_until = excluded.locked_until, status = NULL, body = NULL,
				   created_at = excluded.created_at, expires_at = excluded.expires_at
				 WHERE idempotency_keys.expires_at < ?7
				    OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_until < ?9
				        AND idempotency_keys.operation = excluded.operation AND idempotency_keys.fingerprint = excluded.fingerprint)`,
			)
			.bind(
				claim.appid,
				claim.key,
				claim.operation,
				claim.fingerprint,
				token,
				nowMs + lockMs,
				now,
				new Date(nowMs + IDEMPOTENCY_TTL_MS).toISOString(),
				nowMs,
			),
		readKeyStatement(db, claim.appid, claim.key),
	]);
	const row = read?.results[0];
	if (!row) throw new Error("idempotency key not readable after its claim");
	return { held: row.token === token && row.state === "running", token, row };
}

const readKeyStatement = (db: D1Database, appid: string, key: string) =>
	db
		.prepare(
			"SELECT operation, fingerprint, state, token, locked_until, status, body FROM idempotency_keys WHERE appid = ? AND idempotency_key = ?",
		)
		.bind(appid, key);

export async function readKey(db: D1Database, appid: string, key: string): Promise<IdempotencyRow | null> {
	return readKeyStatement(db, appid, key).first<IdempotencyRow>();
}

/** Stores the answer of the request holding the key (`token`). */
export async function completeKey(db: D1Database, appid: string, key: string, token: string, status: number, body: string): Promise<void> {
	await db
		.prepare("UPDATE idempotency_keys SET state = 'done', status = ?, body = ? WHERE appid = ? AND idempotency_key = ? AND token = ?")
		.bind(status, body, appid, key, token)
		.run();
}

/** Lets the key go after a failure that is not an answer (a 500): the next request with it runs afresh. */
export async function releaseKey(db: D1Database, appid: string, key: string, token: string): Promise<void> {
	await db
		.prepare("DELETE FROM idempotency_keys WHERE appid = ? AND idempotency_key = ? AND token = ? AND state = 'running'")
		.bind(appid, key, token)
		.run();
}

/** Deletes keys past their expiry, at most `limit` per call; returns how many. */
export async function deleteExpiredKeys(db: D1Database, nowMs = Date.now(), limit = 1000): Promise<number> {
	const result = await db
		.prepare(
			`DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE expires_at < ? ORDER BY expires_at LIMIT ?)`,
		)
		.bind(new Date(nowMs).toISOString(), limit)
		.run();
	return result.meta.changes;
}
