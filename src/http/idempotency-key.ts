import { claimKey, completeKey, type IdempotencyRow, readKey, releaseKey } from "../db/idempotency-replies";
import { ApiError, badRequest, errorBody } from "./errors";
import { errorDocsUrl } from "./request-id";

/**
 * The `Idempotency-Key` request header of mutating operations, as Stripe and
 * the IETF draft (draft-ietf-httpapi-idempotency-key-header) define it:
 *
 * - 1-255 printable ASCII characters, else 400 `validation_failed`;
 * - scoped to the app, kept at least 24 h (IDEMPOTENCY_TTL_MS);
 * - a repeat with the same operation and body answers the first answer (same
 *   status and body) with `Idempotent-Replayed: true` and changes nothing;
 * - the same key with another operation or body: 422 `idempotency_key_reused`;
 * - a repeat while the first still runs waits for it (bounded) and replays,
 *   else 409 `idempotency_key_in_progress`;
 * - final answers are stored and replayed; a retryable one is not (the key is
 *   let go, so the retry the client is told to make runs): any 5xx, a 429, and
 *   every error marked `retryable` (`reward_locked`, `idempotency_key_in_progress`).
 *
 * An operation opts in with `mutating: true` in its definition. The ledger
 * operations also hand the key to the ledger, which records it in the same
 * transaction as the debit (see UserLedger.redeemByAmount), so a process that
 * dies after the debit but before the answer is stored cannot debit twice.
 */

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** While the first request holds the key; after this a retry takes over (the first one died). */
const LOCK_MS = 60_000;
/** How long a repeat waits for the first request to finish before answering 409. */
const WAIT_MS = 20_000;
const POLL_MS = 50;

/** The header's key, or null when absent; a malformed key is a 400. */
export function idempotencyKeyOf(headers: Headers): string | null {
	const key = headers.get(IDEMPOTENCY_HEADER);
	if (key === null) return null;
	if (!/^[\x20-\x7e]{1,255}$/.test(key)) {
		throw badRequest(`${IDEMPOTENCY_HEADER}: must be 1 to 255 printable ASCII characters.`, { fields: [IDEMPOTENCY_HEADER] });
	}
	return key;
}

/** JSON with object keys sorted, so two equal bodies give one text whatever the order of their fields. */
export function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
	if (value !== null && typeof value === "object") {
		const entries = Object.entries(value as Record<string, unknown>)
			.filter(([, v]) => v !== undefined)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
	}
	return JSON.stringify(value) ?? "null";
}

/** SHA-256 (hex) of the operation and its body without the credentials, which may rotate between retries. */
export async function requestFingerprint(operation: string, body: Record<string, unknown>): Promise<string> {
	const { apikey: _a, privatekey: _p, ...rest } = body;
	const bytes = new TextEncoder().encode(`${operation}\n${canonicalJson(rest)}`);
	const digest = await crypto.subtle.digest("SHA-256", bytes);
	return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A finished answer: what is stored and replayed. */
export interface StoredAnswer {
	status: number;
	body: string;
	replayed: boolean;
}

export interface IdempotentCall {
	db: D1Database;
	appid: string;
	key: string;
	operation: string;
	fingerprint: string;
	waitUntil(promise: Promise<unknown>): void;
	/**
	 * This request's id and origin: a stored error answer carries them as its
	 * `requestid` and `docs` (request-id.ts), so a replay answers the first
	 * answer's body byte for byte, the first request's id included.
	 */
	requestid?: string;
	origin?: string;
}

const reused = () =>
	new ApiError(422, "idempotency_key_reused", "This Idempotency-Key was used for another operation or body; use a new key.");

function replayOrRefuse(call: IdempotentCall, row: IdempotencyRow): StoredAnswer | null {
	if (row.operation !== call.operation || row.fingerprint !== call.fingerprint) throw reused();
	if (row.state === "done" && row.status !== null && row.body !== null) return { status: row.status, body: row.body, replayed: true };
	return null;
}

/**
 * Runs `run` at most once per key: answers the stored answer of an earlier
 * request with the same key, or runs it and stores its answer. `run` answers
 * expected failures as ApiError (stored); anything else thrown lets the key go.
 */
export async function once(call: IdempotentCall, run: () => Promise<{ status: number; body: unknown }>): Promise<StoredAnswer> {
	const claim = await claimKey(call.db, call, LOCK_MS);
	if (!claim.held) {
		const stored = replayOrRefuse(call, claim.row);
		if (stored) return stored;
		return waitForAnswer(call, run);
	}
	let answer: { status: number; body: string };
	try {
		const result = await run();
		answer = { status: result.status, body: JSON.stringify(result.body) };
	} catch (error) {
		if (!(error instanceof ApiError)) {
			call.waitUntil(
				releaseKey(call.db, call.appid, call.key, claim.token).catch((e) => console.error("idempotency key not released", String(e))),
			);
			throw error;
		}
		if (isRetryable(error)) {
			// Awaited: the retry the error asks for must find the key free.
			await releaseKey(call.db, call.appid, call.key, claim.token);
			throw error;
		}
		const reference = call.requestid && call.origin ? { requestid: call.requestid, docs: errorDocsUrl(call.origin, error.errorcode) } : {};
		answer = { status: error.status, body: JSON.stringify({ ...errorBody(error.errorcode, error.message, error.extra), ...reference }) };
	}
	// Stored before answering: a retry that arrives as soon as this answer does must find it.
	await completeKey(call.db, call.appid, call.key, claim.token, answer.status, answer.body);
	return { ...answer, replayed: false };
}

/** True for an answer that tells the client to try again: storing it would replay the refusal after its cause is gone. */
export function isRetryable(error: ApiError): boolean {
	return error.status >= 500 || error.status === 429 || error.extra.retryable === true;
}

async function waitForAnswer(call: IdempotentCall, run: () => Promise<{ status: number; body: unknown }>): Promise<StoredAnswer> {
	const until = Date.now() + WAIT_MS;
	while (Date.now() < until) {
		await new Promise((resolve) => setTimeout(resolve, POLL_MS));
		const row = await readKey(call.db, call.appid, call.key);
		// Gone: the first request failed with a 500 and let the key go; this one may run.
		if (!row) return once(call, run);
		const stored = replayOrRefuse(call, row);
		if (stored) return stored;
	}
	throw inProgress();
}

const inProgress = () =>
	new ApiError(409, "idempotency_key_in_progress", "A request with this Idempotency-Key is still running; retry shortly.", {
		retryable: true,
	});
