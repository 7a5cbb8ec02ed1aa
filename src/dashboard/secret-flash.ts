import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { isSecureContext } from "./session";

/**
 * A one-time flash for new secrets (a created app's keys, a rotated private
 * key): the POST that made them stores them here and redirects, the GET shows
 * them once and clears the flash, so reloading the page never rotates again
 * (post/redirect/get) and a second look shows nothing. The secrets travel in
 * an HttpOnly cookie limited to the dashboard, encrypted (AES-GCM under a key
 * derived from ADMIN_TOKEN and bound to the session), and expire in minutes.
 */

const COOKIE = "dash_secret";
const TTL_SECONDS = 5 * 60;
const encoder = new TextEncoder();

export const secretsSchema = z.object({
	appid: z.string(),
	apikey: z.string().optional(),
	privatekey: z.string().optional(),
	webhooksecret: z.string().optional(),
	/** The test pair (docs/test-mode.md): made with the app, or rotated on its own. */
	testapikey: z.string().optional(),
	testprivatekey: z.string().optional(),
	/** What made them: the page's title. */
	kind: z.enum(["created", "rotated", "testkeys"]),
	expires: z.number(),
});
export type Secrets = z.output<typeof secretsSchema>;

const b64 = (bytes: Uint8Array) =>
	btoa(String.fromCharCode(...bytes))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");
const unb64 = (text: string) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (ch) => ch.charCodeAt(0));

async function flashKey(adminToken: string, sessionId: string): Promise<CryptoKey> {
	const base = await crypto.subtle.importKey("raw", encoder.encode(adminToken), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const raw = await crypto.subtle.sign("HMAC", base, encoder.encode(`dashboard-secret-flash-v1:${sessionId}`));
	return crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
}

const cookieOptions = (c: Context) =>
	({ path: "/dashboard", httpOnly: true, secure: isSecureContext(c.req.url), sameSite: "Strict", maxAge: TTL_SECONDS }) as const;

export async function putSecrets(c: Context<any>, sessionId: string, secrets: Omit<Secrets, "expires">): Promise<void> {
	const iv = crypto.getRandomValues(new Uint8Array(12));
	const plain = encoder.encode(JSON.stringify({ ...secrets, expires: Date.now() + TTL_SECONDS * 1000 }));
	const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await flashKey(c.env.ADMIN_TOKEN, sessionId), plain));
	setCookie(c, COOKIE, `${b64(iv)}.${b64(sealed)}`, cookieOptions(c));
}

/** The flashed secrets of `appid` for this session, once: the cookie is cleared whatever it held. */
export async function takeSecrets(c: Context<any>, sessionId: string, appid: string): Promise<Secrets | null> {
	const value = getCookie(c, COOKIE);
	if (!value) return null;
	deleteCookie(c, COOKIE, { path: "/dashboard", secure: isSecureContext(c.req.url) });
	const [iv, sealed] = value.split(".");
	if (!iv || !sealed) return null;
	try {
		const key = await flashKey(c.env.ADMIN_TOKEN, sessionId);
		const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: unb64(iv) }, key, unb64(sealed));
		const secrets = secretsSchema.parse(JSON.parse(new TextDecoder().decode(plain)));
		return secrets.appid === appid && secrets.expires > Date.now() ? secrets : null;
	} catch {
		// Another session's flash, a tampered cookie or an old format: nothing to show.
		return null;
	}
}
