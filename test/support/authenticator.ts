/**
 * A software WebAuthn authenticator for workerd tests (the browser tests use
 * Chromium's virtual authenticator instead): one ES256 (P-256) credential,
 * `none` attestation, user present and verified, a signature counter. It
 * answers the JSON the dashboard's options routes give with the JSON
 * @simplewebauthn/browser would post, byte for byte as W3C WebAuthn §6.1
 * (authenticator data) and §6.5 (attestation objects) lay them out.
 */

const encoder = new TextEncoder();

export const b64url = (bytes: Uint8Array) =>
	btoa(String.fromCharCode(...bytes))
		.replace(/\+/g, "-")
		.replace(/\//g, "_")
		.replace(/=+$/, "");

const concat = (...parts: Uint8Array[]) => {
	const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
	let at = 0;
	for (const p of parts) {
		out.set(p, at);
		at += p.length;
	}
	return out;
};

const sha256 = async (bytes: Uint8Array) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));

/** The CBOR (RFC 8949) this needs: small integers, byte and text strings, maps. */
type Cbor = number | string | Uint8Array | Map<Cbor, Cbor>;
function cbor(value: Cbor): Uint8Array {
	const head = (major: number, n: number) =>
		n < 24
			? Uint8Array.of((major << 5) | n)
			: n < 256
				? Uint8Array.of((major << 5) | 24, n)
				: Uint8Array.of((major << 5) | 25, n >> 8, n & 255);
	if (typeof value === "number") return value >= 0 ? head(0, value) : head(1, -1 - value);
	if (typeof value === "string") {
		const bytes = encoder.encode(value);
		return concat(head(3, bytes.length), bytes);
	}
	if (value instanceof Uint8Array) return concat(head(2, value.length), value);
	return concat(head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)]));
}

/** An ECDSA signature as WebAuthn carries it: DER (SEQUENCE of two INTEGERs), from WebCrypto's raw r || s. */
function der(raw: Uint8Array): Uint8Array {
	const integer = (bytes: Uint8Array) => {
		let i = 0;
		while (i < bytes.length - 1 && bytes[i] === 0) i++;
		const trimmed = bytes.slice(i);
		const body = (trimmed[0] ?? 0) & 0x80 ? concat(Uint8Array.of(0), trimmed) : trimmed;
		return concat(Uint8Array.of(0x02, body.length), body);
	};
	const seq = concat(integer(raw.slice(0, 32)), integer(raw.slice(32)));
	return concat(Uint8Array.of(0x30, seq.length), seq);
}

const FLAGS = { UP: 0x01, UV: 0x04, AT: 0x40 };

export interface SoftAuthenticator {
	credentialId: string;
	counter: number;
	/** Answers registration options (`PublicKeyCredentialCreationOptionsJSON`). */
	register(options: { challenge: string; rp: { id?: string } }, origin: string): Promise<Record<string, unknown>>;
	/** Answers sign-in options (`PublicKeyCredentialRequestOptionsJSON`). */
	authenticate(options: { challenge: string; rpId?: string }, origin: string): Promise<Record<string, unknown>>;
}

export async function softAuthenticator(): Promise<SoftAuthenticator> {
	const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
	const raw = new Uint8Array((await crypto.subtle.exportKey("raw", keys.publicKey)) as ArrayBuffer);
	const id = crypto.getRandomValues(new Uint8Array(16));
	const cose = cbor(
		new Map<Cbor, Cbor>([
			[1, 2], // kty: EC2
			[3, -7], // alg: ES256
			[-1, 1], // crv: P-256
			[-2, raw.slice(1, 33)],
			[-3, raw.slice(33, 65)],
		]),
	);
	const clientData = (type: string, challenge: string, origin: string) =>
		encoder.encode(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
	const auth: SoftAuthenticator = {
		credentialId: b64url(id),
		counter: 0,
		async register(options, origin) {
			const rpId = options.rp.id ?? new URL(origin).hostname;
			const counter = Uint8Array.of(0, 0, 0, auth.counter);
			const attested = concat(new Uint8Array(16), Uint8Array.of(0, id.length), id, cose);
			const authData = concat(await sha256(encoder.encode(rpId)), Uint8Array.of(FLAGS.UP | FLAGS.UV | FLAGS.AT), counter, attested);
			const attestationObject = cbor(
				new Map<Cbor, Cbor>([
					["fmt", "none"],
					["attStmt", new Map()],
					["authData", authData],
				]),
			);
			return {
				id: auth.credentialId,
				rawId: auth.credentialId,
				type: "public-key",
				response: {
					clientDataJSON: b64url(clientData("webauthn.create", options.challenge, origin)),
					attestationObject: b64url(attestationObject),
					transports: ["internal"],
				},
				clientExtensionResults: {},
				authenticatorAttachment: "platform",
			};
		},
		async authenticate(options, origin) {
			auth.counter++;
			const rpId = options.rpId ?? new URL(origin).hostname;
			const authData = concat(await sha256(encoder.encode(rpId)), Uint8Array.of(FLAGS.UP | FLAGS.UV), Uint8Array.of(0, 0, 0, auth.counter));
			const data = clientData("webauthn.get", options.challenge, origin);
			const signed = concat(authData, await sha256(data));
			const signature = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, signed));
			return {
				id: auth.credentialId,
				rawId: auth.credentialId,
				type: "public-key",
				response: {
					clientDataJSON: b64url(data),
					authenticatorData: b64url(authData),
					signature: b64url(der(signature)),
				},
				clientExtensionResults: {},
				authenticatorAttachment: "platform",
			};
		},
	};
	return auth;
}
