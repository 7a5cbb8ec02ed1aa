import { toLineFeeds } from "./text-hygiene";

/**
 * Request normalization shared by every operation: case-insensitive field
 * names, the spec's alternative spellings, URL-decoding of text, and line
 * breaks as LF.
 */

/** Alternative spellings of the spec, mapped to the one name our schemas use. */
const FIELD_ALIASES: Readonly<Record<string, string>> = {
	existinguser: "isexistinguser",
	emailid: "email",
	useridinstore: "useraccountid",
	appusername: "name",
};

/** Fields never URL-decoded: credentials and identifiers we issue are plain. */
const NOT_DECODED = new Set(["apikey", "privatekey"]);

/** Email addresses keep a literal `+` (common in addresses); `%xx` is still decoded. */
const PLUS_IS_LITERAL = new Set(["email", "friendemail"]);

/**
 * Decodes URL-encoded text once: `+` becomes a space and `%xx` escapes become
 * characters. A malformed escape leaves the text as sent rather than failing.
 */
export function decodeRequestText(value: string, plusIsLiteral = false): string {
	const spaced = plusIsLiteral ? value : value.replace(/\+/g, " ");
	if (!spaced.includes("%")) return spaced;
	try {
		return decodeURIComponent(spaced);
	} catch {
		return spaced;
	}
}

/**
 * Encodes text the way `application/x-www-form-urlencoded` does (spaces as
 * `+`), as the spec returns campaign texts and terms.
 */
export function formUrlEncode(value: string): string {
	return encodeURIComponent(value)
		.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
		.replace(/%20/g, "+");
}

function normalizeValue(key: string, value: unknown): unknown {
	if (typeof value === "string") {
		return NOT_DECODED.has(key) ? value : toLineFeeds(decodeRequestText(value, PLUS_IS_LITERAL.has(key)));
	}
	if (Array.isArray(value)) return value.map((item) => normalizeValue(key, item));
	if (isPlainObject(value)) return normalizeFields(value);
	return value;
}

/**
 * Lower-cases field names (recursively, so entries of `rewardslist` too),
 * folds the spec's alternative spellings into one name, and URL-decodes text.
 * When two spellings of one field are sent, the canonical spelling wins.
 */
export function normalizeFields(body: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	const canonicalSeen = new Set<string>();
	for (const [rawKey, value] of Object.entries(body)) {
		const lower = rawKey.toLowerCase();
		// hasOwn: `FIELD_ALIASES["__proto__"]` would be Object.prototype, not an alias.
		const key = Object.hasOwn(FIELD_ALIASES, lower) ? FIELD_ALIASES[lower]! : lower;
		const isCanonical = key === lower;
		if (Object.hasOwn(out, key) && (canonicalSeen.has(key) || !isCanonical)) continue;
		if (isCanonical) canonicalSeen.add(key);
		// defineProperty: a key `__proto__` stays a plain (ignored) field instead of replacing the prototype.
		Object.defineProperty(out, key, { value: normalizeValue(key, value), enumerable: true, writable: true, configurable: true });
	}
	return out;
}

/** True for `{...}` values, false for arrays, null and primitives. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}
