import type { PasswordRecord } from "../db/members";
import { constantTimeEqual } from "../domain/crypto";

/**
 * Members' passwords: PBKDF2-SHA256 through WebCrypto with a random 16-byte
 * salt per person. 100,000 iterations is the most workerd allows (it refuses
 * more with NotSupportedError); the count is stored with each hash, so a
 * later raise re-hashes at the next sign-in without breaking old ones.
 */
export const PBKDF2_ITERATIONS = 100_000;
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;

const encoder = new TextEncoder();
const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<string> {
	const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
	const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
	return toBase64(new Uint8Array(bits));
}

/** What is wrong with a new password, or null. */
export function passwordProblem(password: string): string | null {
	if (password.length < MIN_PASSWORD_LENGTH) return `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`;
	if (password.length > MAX_PASSWORD_LENGTH) return `The password must have at most ${MAX_PASSWORD_LENGTH} characters.`;
	return null;
}

export async function hashPassword(password: string, iterations = PBKDF2_ITERATIONS): Promise<PasswordRecord> {
	const salt = crypto.getRandomValues(new Uint8Array(16));
	return { hash: await derive(password, salt, iterations), salt: toBase64(salt), iterations };
}

export async function verifyPassword(password: string, record: PasswordRecord): Promise<boolean> {
	if (password.length > MAX_PASSWORD_LENGTH) return false;
	return constantTimeEqual(await derive(password, fromBase64(record.salt), record.iterations), record.hash);
}
