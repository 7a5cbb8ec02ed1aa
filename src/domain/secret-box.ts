/**
 * Secrets kept at rest (an app's Stripe keys): AES-256-GCM under a key
 * derived from the Worker secret SECRETS_KEY (SHA-256 of it), a random
 * 12-byte IV per seal. The sealed form is `v1.<iv>.<ciphertext>` in base64;
 * the app id is bound as additional data, so a sealed value copied to another
 * app's row does not open.
 */

const encoder = new TextEncoder();
const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(secret: string): Promise<CryptoKey> {
	if (!secret) throw new Error("SECRETS_KEY is not set: secrets cannot be stored (README, Stripe)");
	let key = keys.get(secret);
	if (!key) {
		key = crypto.subtle
			.digest("SHA-256", encoder.encode(`secret-box-v1:${secret}`))
			.then((raw) => crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]));
		keys.set(secret, key);
	}
	return key;
}

export async function seal(secret: string, context: string, plaintext: string): Promise<string> {
	const iv = crypto.getRandomValues(new Uint8Array(12));
	const sealed = await crypto.subtle.encrypt(
		{ name: "AES-GCM", iv, additionalData: encoder.encode(context) },
		await keyOf(secret),
		encoder.encode(plaintext),
	);
	return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function open(secret: string, context: string, sealed: string): Promise<string> {
	const [version, iv, body] = sealed.split(".");
	if (version !== "v1" || !iv || !body) throw new Error("secret-box: not a sealed value");
	const plain = await crypto.subtle.decrypt(
		{ name: "AES-GCM", iv: fromBase64(iv), additionalData: encoder.encode(context) },
		await keyOf(secret),
		fromBase64(body),
	);
	return new TextDecoder().decode(plain);
}
