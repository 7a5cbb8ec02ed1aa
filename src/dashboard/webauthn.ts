import {
	type AuthenticationResponseJSON,
	type AuthenticatorTransport,
	generateAuthenticationOptions,
	generateRegistrationOptions,
	type RegistrationResponseJSON,
	verifyAuthenticationResponse,
	verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { z } from "zod";
import type { Passkey } from "../db/passkeys";
import { constantTimeEqual } from "../domain/crypto";
import { mac } from "./session";

/**
 * The WebAuthn ceremonies of the dashboard's passkeys (W3C Web Authentication
 * Level 3), through @simplewebauthn/server. The relying party is the host the
 * dashboard is reached at (§5.1.3: the RP ID is the origin's host), so a
 * passkey works on the host it was registered on.
 *
 * Challenges (§13.4.3: random, at least 16 bytes, used once) are minted
 * without a D1 write: `purpose.expiry.nonce.mac`, a MAC under a key derived
 * from ADMIN_TOKEN over the purpose, expiry, nonce and what the ceremony is
 * bound to (the sign-in form's nonce cookie, or the signed-in session). A
 * ceremony checks the MAC and the expiry, and db/passkeys.ts records the
 * challenge as used in the same batch as its effect, so it works once; an
 * anonymous caller asking for options writes nothing.
 */

export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
export type Purpose = "signin" | "register";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const b64urlOf = (bytes: Uint8Array) =>
	btoa(String.fromCharCode(...bytes))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");

function bytesOfB64url(text: string): Uint8Array | null {
	try {
		const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
		return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
	} catch {
		return null;
	}
}

/** Where the ceremony runs: the dashboard's origin and its host as the RP ID. */
export function relyingParty(url: string): { origin: string; rpID: string } {
	const { origin, hostname } = new URL(url);
	return { origin, rpID: hostname };
}

async function mintChallenge(adminToken: string, purpose: Purpose, binding: string, now: number): Promise<Uint8Array<ArrayBuffer>> {
	const expiry = now + CHALLENGE_TTL_MS;
	const nonce = b64urlOf(crypto.getRandomValues(new Uint8Array(18)));
	const signature = await mac(adminToken, `webauthn:${purpose}:${expiry}:${nonce}:${binding}`);
	return Uint8Array.from(encoder.encode(`${purpose}.${expiry}.${nonce}.${signature}`));
}

const clientDataSchema = z.object({ challenge: z.string().max(512) });

/**
 * The challenge a response answers (base64url, as in its clientDataJSON) and
 * its expiry, when it was minted here for `purpose` and `binding` and has not
 * expired at `now`; else null. Whether it was used is for db/passkeys.ts.
 */
export async function checkedChallenge(
	adminToken: string,
	purpose: Purpose,
	binding: string,
	clientDataJSON: string,
	now: number,
): Promise<{ challenge: string; expiresAt: number } | null> {
	const bytes = bytesOfB64url(clientDataJSON);
	if (!bytes) return null;
	let clientData: unknown;
	try {
		clientData = JSON.parse(decoder.decode(bytes));
	} catch {
		return null;
	}
	const parsed = clientDataSchema.safeParse(clientData);
	const raw = parsed.success ? bytesOfB64url(parsed.data.challenge) : null;
	if (!parsed.success || !raw) return null;
	const [kind, expiry, nonce, signature, ...rest] = decoder.decode(raw).split(".");
	if (kind !== purpose || !expiry || !/^\d+$/.test(expiry) || !nonce || !signature || rest.length > 0) return null;
	if (Number(expiry) <= now) return null;
	if (!constantTimeEqual(signature, await mac(adminToken, `webauthn:${purpose}:${expiry}:${nonce}:${binding}`))) return null;
	return { challenge: parsed.data.challenge, expiresAt: Number(expiry) };
}

/** Options for signing in with any passkey of this site (a discoverable credential: the authenticator says whose). */
export async function signInOptions(adminToken: string, url: string, loginNonce: string, now: number) {
	return generateAuthenticationOptions({
		rpID: relyingParty(url).rpID,
		challenge: await mintChallenge(adminToken, "signin", loginNonce, now),
		userVerification: "required",
		timeout: CHALLENGE_TTL_MS,
	});
}

/** Options for registering a new passkey of the signed-in person; their existing passkeys are excluded (§5.4.3). */
export async function registrationOptions(
	adminToken: string,
	url: string,
	sessionId: string,
	person: { personid: string; email: string },
	existing: Passkey[],
	now: number,
) {
	return generateRegistrationOptions({
		rpName: "Referral dashboard",
		rpID: relyingParty(url).rpID,
		userName: person.email,
		userID: Uint8Array.from(encoder.encode(person.personid)),
		challenge: await mintChallenge(adminToken, "register", `${sessionId}:${person.personid}`, now),
		attestationType: "none",
		excludeCredentials: existing.map((k) => ({ id: k.credentialId, transports: k.transports as AuthenticatorTransport[] })),
		authenticatorSelection: { residentKey: "required", userVerification: "required" },
		timeout: CHALLENGE_TTL_MS,
	});
}

/** A response posted by the browser: JSON of the library's shape (checked by the library itself). */
export function parseResponse<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(text: string): T | null {
	try {
		const value: unknown = JSON.parse(text);
		const shape = z.looseObject({ id: z.string().min(1).max(1024), response: z.looseObject({ clientDataJSON: z.string().max(4096) }) });
		return shape.safeParse(value).success ? (value as T) : null;
	} catch {
		return null;
	}
}

/** The new credential of a registration response, or null when it does not verify (user verification required). */
export async function verifiedRegistration(response: RegistrationResponseJSON, challenge: string, url: string) {
	const rp = relyingParty(url);
	try {
		const result = await verifyRegistrationResponse({
			response,
			expectedChallenge: challenge,
			expectedOrigin: rp.origin,
			expectedRPID: rp.rpID,
			requireUserVerification: true,
		});
		if (!result.verified || !result.registrationInfo) return null;
		const { credential } = result.registrationInfo;
		return {
			credentialId: credential.id,
			publicKey: b64urlOf(credential.publicKey),
			counter: credential.counter,
			transports: credential.transports ?? [],
		};
	} catch {
		return null;
	}
}

/** The passkey's new counter when the sign-in response verifies against it, else null. */
export async function verifiedSignIn(response: AuthenticationResponseJSON, challenge: string, url: string, passkey: Passkey) {
	const rp = relyingParty(url);
	const publicKey = bytesOfB64url(passkey.publicKey);
	if (!publicKey) return null;
	try {
		const result = await verifyAuthenticationResponse({
			response,
			expectedChallenge: challenge,
			expectedOrigin: rp.origin,
			expectedRPID: rp.rpID,
			credential: {
				id: passkey.credentialId,
				publicKey: new Uint8Array(publicKey),
				counter: passkey.counter,
				transports: passkey.transports as AuthenticatorTransport[],
			},
			requireUserVerification: true,
		});
		return result.verified ? { newCounter: result.authenticationInfo.newCounter } : null;
	} catch {
		return null;
	}
}
