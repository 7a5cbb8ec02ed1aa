/**
 * Identifiers and secrets the service issues. All come from the platform's
 * CSPRNG (crypto.getRandomValues).
 */

/** Referral-code alphabet: no 0/O, 1/I/L, so a code read aloud or typed is unambiguous. */
export const REFERRAL_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
export const REFERRAL_CODE_LENGTH = 8;

const LOWER_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * Random string over `alphabet`, without modulo bias (rejection sampling).
 */
export function randomString(length: number, alphabet: string): string {
	const limit = 256 - (256 % alphabet.length);
	let out = "";
	while (out.length < length) {
		const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
		for (const byte of bytes) {
			if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
		}
	}
	return out;
}

/** A short, readable referral code such as `K7PX3MQA` (31^8 ≈ 8.5e11 codes). */
export function newReferralCode(): string {
	return randomString(REFERRAL_CODE_LENGTH, REFERRAL_CODE_ALPHABET);
}

/** True when `code` could be a referral code we issued (cheap pre-check before a lookup). */
export function looksLikeReferralCode(code: string): boolean {
	return code.length >= 4 && code.length <= 32 && /^[0-9A-Za-z_-]+$/.test(code);
}

export const newAppId = () => `app_${randomString(16, LOWER_ALNUM)}`;
export const newApiKey = () => `ak_${randomString(32, LOWER_ALNUM)}`;
export const newPrivateKey = () => `pk_${randomString(48, LOWER_ALNUM)}`;
/** Test keys (docs/test-mode.md): the prefix tells a reader which mode a key works in. */
export const newTestApiKey = () => `ak_test_${randomString(32, LOWER_ALNUM)}`;
export const newTestPrivateKey = () => `pk_test_${randomString(48, LOWER_ALNUM)}`;
export const newUserKey = () => `u${randomString(19, LOWER_ALNUM)}`;
export const newEventId = () => `msg_${randomString(24, LOWER_ALNUM)}`;

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
	const bytes = crypto.getRandomValues(new Uint8Array(32));
	return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}
/** A multi-ledger transaction id (see coordination/ledger-transaction.ts). */
export const newTransactionId = () => `tx_${randomString(24, LOWER_ALNUM)}`;
export const newTokenId = () => `tok_${randomString(16, LOWER_ALNUM)}`;
/** An app-scoped admin token: 43 random characters after its prefix, shown once, stored as a hash. */
export const newAdminToken = () => `adm_${randomString(43, LOWER_ALNUM)}`;

/**
 * A customid as it may appear inside an id that leaves the service (a
 * webhook's `webhook-id`, a delivery's URL path): customids are any printable
 * text (docs/api.md), which a header or a path cannot carry as is. An
 * integer customid stays itself, so the ids of events recorded when customids
 * had to be integers do not change; any other one becomes `x` and the
 * base64url of its UTF-8 bytes (one-to-one, so two customids never share an id).
 */
export function customIdToken(customid: string): string {
	if (/^-?\d+$/.test(customid)) return customid;
	let binary = "";
	for (const byte of new TextEncoder().encode(customid)) binary += String.fromCharCode(byte);
	return `x${btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}
