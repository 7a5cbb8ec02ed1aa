/**
 * Verifies a webhook the service sent, per the Standard Webhooks scheme it
 * signs with (docs/webhooks.md): `webhook-signature` holds one or more
 * `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`,
 * keyed with the base64 bytes after `whsec_` of the app's webhook secret.
 * Verify the raw body, before any JSON parsing.
 */

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The parsed event: `type`, `timestamp`, `livemode` where the service sends it, and `data`. */
export interface WebhookEvent {
	type: string;
	timestamp?: string;
	/** false: made with the app's test keys (test mode); true: live. */
	livemode?: boolean;
	data: Record<string, any>;
	[field: string]: unknown;
}

export class WebhookVerificationError extends Error {
	override readonly name = "WebhookVerificationError";
}

/** How far a timestamp may be from now, as Standard Webhooks' reference libraries allow. */
const TOLERANCE_SECONDS = 5 * 60;

function header(headers: WebhookHeaders, name: string): string | null {
	if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name);
	const record = headers as Record<string, string | string[] | undefined>;
	const key = Object.keys(record).find((k) => k.toLowerCase() === name);
	const value = key === undefined ? undefined : record[key];
	return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
	const binary = atob(text);
	const bytes = new Uint8Array(binary.length);
	for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
	return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
	let binary = "";
	for (const byte of bytes) binary += String.fromCharCode(byte);
	return btoa(binary);
}

function sameText(a: string, b: string): boolean {
	if (a.length !== b.length) return false;
	let diff = 0;
	for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
	return diff === 0;
}

/** Returns the event when the signature is good and fresh; throws WebhookVerificationError otherwise. */
export async function verifyWebhook(
	secret: string,
	headers: WebhookHeaders,
	body: string | Uint8Array | ArrayBuffer,
	now: Date = new Date(),
): Promise<WebhookEvent> {
	const id = header(headers, "webhook-id");
	const timestamp = header(headers, "webhook-timestamp");
	const signatures = header(headers, "webhook-signature");
	if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
	const seconds = Number(timestamp);
	if (!/^\d+$/.test(timestamp) || Math.abs(now.getTime() / 1000 - seconds) > TOLERANCE_SECONDS) {
		throw new WebhookVerificationError("timestamp too old or too new");
	}
	let key: Uint8Array<ArrayBuffer>;
	try {
		key = base64ToBytes(secret.startsWith("whsec_") ? secret.slice(6) : secret);
	} catch {
		throw new WebhookVerificationError("the secret is not a whsec_ secret");
	}
	const text = typeof body === "string" ? body : new TextDecoder().decode(body);
	const cryptoKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const mac = await crypto.subtle.sign("HMAC", cryptoKey, new TextEncoder().encode(`${id}.${timestamp}.${text}`));
	const expected = bytesToBase64(new Uint8Array(mac));
	const good = signatures.split(" ").some((part) => {
		const [version, signature] = part.split(",", 2);
		return version === "v1" && signature !== undefined && sameText(signature, expected);
	});
	if (!good) throw new WebhookVerificationError("no matching signature");
	try {
		return JSON.parse(text) as WebhookEvent;
	} catch {
		throw new WebhookVerificationError("the body is not JSON");
	}
}
