import { constantTimeEqual } from "../domain/crypto";

/**
 * Signed links to a user's hosted referral page: `/share/<appid>/<userkey>?exp=<unix s>&sig=<hmac>`.
 * The HMAC-SHA256 key is the app's private-key hash (secret material only the
 * service holds), so rotating the private key also revokes every page link.
 */

/** How long a page link stays valid. */
export const SHARE_PAGE_TTL_SECONDS = 3600;

const encoder = new TextEncoder();

function base64url(bytes: ArrayBuffer): string {
	return btoa(String.fromCharCode(...new Uint8Array(bytes)))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");
}

async function hmac(secret: string, message: string): Promise<string> {
	const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	// The label keeps these signatures apart from any other use of the same key.
	return base64url(await crypto.subtle.sign("HMAC", key, encoder.encode(`sharepage.v1\n${message}`)));
}

const signedText = (appid: string, userkey: string, exp: number) => `${appid}\n${userkey}\n${exp}`;

export const sharePagePath = (appid: string, userkey: string) => `/share/${encodeURIComponent(appid)}/${encodeURIComponent(userkey)}`;

/** The page link of (app, user), valid until `exp` (unix seconds). */
export async function signSharePageUrl(base: string, secret: string, appid: string, userkey: string, exp: number): Promise<string> {
	const sig = await hmac(secret, signedText(appid, userkey, exp));
	return `${base.replace(/\/+$/, "")}${sharePagePath(appid, userkey)}?exp=${exp}&sig=${sig}`;
}

/** True when `sig` signs (app, user, exp) and `exp` has not passed at `nowSeconds`. */
export async function verifySharePage(
	secret: string,
	appid: string,
	userkey: string,
	exp: string | undefined,
	sig: string | undefined,
	nowSeconds: number,
): Promise<boolean> {
	if (!exp || !sig || !/^\d{1,12}$/.test(exp)) return false;
	const expires = Number(exp);
	// A link never lives longer than the TTL, whatever clock skew signed it.
	if (expires < nowSeconds || expires > nowSeconds + SHARE_PAGE_TTL_SECONDS + 60) return false;
	return constantTimeEqual(sig, await hmac(secret, signedText(appid, userkey, expires)));
}
