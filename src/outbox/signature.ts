/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signed
 * content is `${webhook-id}.${webhook-timestamp}.${body}`, the key is the
 * base64-decoded part of the app's `whsec_` secret, the MAC is HMAC-SHA256,
 * and the header carries `v1,<base64 MAC>`.
 */

const SECRET_PREFIX = "whsec_";
const encoder = new TextEncoder();

/** The key bytes of a `whsec_...` secret (a secret without the prefix is taken as plain base64). */
export function webhookSecretBytes(secret: string): Uint8Array<ArrayBuffer> {
	const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
	const binary = atob(encoded);
	const bytes = new Uint8Array(binary.length);
	for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
	return bytes;
}

export function base64(bytes: ArrayBuffer | Uint8Array): string {
	const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
	let binary = "";
	for (const byte of view) binary += String.fromCharCode(byte);
	return btoa(binary);
}

/** The `webhook-signature` header value for one delivery: `v1,<base64 HMAC-SHA256>`. */
export async function signWebhook(secret: string, id: string, timestamp: number, body: string): Promise<string> {
	const key = await crypto.subtle.importKey("raw", webhookSecretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${id}.${timestamp}.${body}`));
	return `v1,${base64(mac)}`;
}

/** The headers of one signed delivery. `timestamp` is in unix seconds. */
export async function webhookHeaders(secret: string, id: string, timestamp: number, body: string): Promise<Record<string, string>> {
	return {
		"content-type": "application/json",
		"user-agent": "referral-rewards-webhooks/1",
		"webhook-id": id,
		"webhook-timestamp": String(timestamp),
		"webhook-signature": await signWebhook(secret, id, timestamp, body),
	};
}
