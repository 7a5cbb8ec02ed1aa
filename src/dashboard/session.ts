import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { adminSessionLive, deleteAdminSession, insertAdminSession, type SignInMethod } from "../db/admin-sessions";
import { constantTimeEqual, sha256Hex } from "../domain/crypto";

/**
 * Dashboard sessions: a cookie `<expiry>.<id>.<mac>` signed with HMAC-SHA256
 * under a key derived from ADMIN_TOKEN, so rotating the token signs every
 * session out, and a row in D1 (db/admin-sessions.ts) checked on each
 * request, so signing out ends the session on the server: a copied cookie
 * stops working at once, not when it expires. Each form carries a CSRF token
 * (a MAC of the session id, or of a login nonce on the sign-in form) that a
 * cross-site page cannot read.
 */

export const SESSION_COOKIE = "dash_session";
const LOGIN_COOKIE = "dash_login";
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const encoder = new TextEncoder();

const b64url = (bytes: ArrayBuffer) =>
	btoa(String.fromCharCode(...new Uint8Array(bytes)))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");

const hmacKey = (raw: BufferSource) => crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);

/** The signing key: HMAC(ADMIN_TOKEN, purpose), never the token itself. */
async function sessionKey(adminToken: string): Promise<CryptoKey> {
	const derived = await crypto.subtle.sign("HMAC", await hmacKey(encoder.encode(adminToken)), encoder.encode("dashboard-session-v1"));
	return hmacKey(derived);
}

export async function mac(adminToken: string, message: string): Promise<string> {
	return b64url(await crypto.subtle.sign("HMAC", await sessionKey(adminToken), encoder.encode(message)));
}

const randomId = () => b64url(crypto.getRandomValues(new Uint8Array(18)).buffer);

/** Secure everywhere except plain http on localhost, where browsers would drop a Secure cookie. */
export function isSecureContext(url: string): boolean {
	const { protocol, hostname } = new URL(url);
	return !(protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(hostname));
}

const cookieOptions = (c: Context, maxAgeSeconds: number) =>
	({
		path: "/dashboard",
		httpOnly: true,
		secure: isSecureContext(c.req.url),
		sameSite: "Strict",
		maxAge: maxAgeSeconds,
	}) as const;

export interface Session {
	id: string;
	csrf: string;
	/** The signed-in member's person; null for the superuser (the admin token). */
	personid: string | null;
	/** A member's password session while an app of theirs requires passkeys: only their first passkey may be registered. */
	passkeyNeeded: boolean;
}

/** The signed-in session, or null (unsigned, expired, or signed under another token). */
export async function readSession(c: Context<any>): Promise<Session | null> {
	const token = c.env.ADMIN_TOKEN;
	const value = getCookie(c, SESSION_COOKIE);
	if (!token || !value) return null;
	const [expiry, id, signature] = value.split(".");
	if (!expiry || !id || !signature || !/^\d+$/.test(expiry) || Number(expiry) < Date.now()) return null;
	if (!constantTimeEqual(signature, await mac(token, `session:${expiry}.${id}`))) return null;
	// Signed under the current token, and not signed out: the D1 row is read only for a cookie that passed the MAC.
	const live = await adminSessionLive(c.env.DB, await sha256Hex(id), Date.now());
	if (!live) return null;
	return { id, csrf: await mac(token, `csrf:${id}`), personid: live.personid, passkeyNeeded: live.passkeyNeeded };
}

/** Signs in the superuser (`personid` null, by "token") or a member (by "password" or "passkey"). */
export async function startSession(c: Context<any>, personid: string | null, method: SignInMethod): Promise<void> {
	const expiry = Date.now() + SESSION_TTL_MS;
	const id = randomId();
	await insertAdminSession(c.env.DB, await sha256Hex(id), expiry, personid, method);
	const signature = await mac(c.env.ADMIN_TOKEN, `session:${expiry}.${id}`);
	setCookie(c, SESSION_COOKIE, `${expiry}.${id}.${signature}`, cookieOptions(c, SESSION_TTL_MS / 1000));
	deleteCookie(c, LOGIN_COOKIE, { path: "/dashboard" });
}

/** Signs `session` out on the server (its row is deleted) and clears the cookie. */
export async function endSession(c: Context<any>, session: Session): Promise<void> {
	await deleteAdminSession(c.env.DB, await sha256Hex(session.id));
	deleteCookie(c, SESSION_COOKIE, { path: "/dashboard", secure: isSecureContext(c.req.url) });
}

/** The sign-in form's nonce (its cookie), which a passkey sign-in's challenge is bound to; null before the form was shown. */
export const loginNonce = (c: Context<any>): string | null => getCookie(c, LOGIN_COOKIE) ?? null;

/** CSRF token of the sign-in form: a fresh nonce in a cookie, its MAC in the form. */
export async function loginCsrf(c: Context<any>): Promise<string> {
	const nonce = getCookie(c, LOGIN_COOKIE) ?? randomId();
	setCookie(c, LOGIN_COOKIE, nonce, cookieOptions(c, 60 * 60));
	return mac(c.env.ADMIN_TOKEN ?? "", `login:${nonce}`);
}

export async function checkLoginCsrf(c: Context<any>, presented: string): Promise<boolean> {
	const nonce = getCookie(c, LOGIN_COOKIE);
	return !!nonce && constantTimeEqual(presented, await mac(c.env.ADMIN_TOKEN ?? "", `login:${nonce}`));
}
