import { ApiError } from "./errors";

/**
 * Text hygiene for request values: characters no field of this API has a use
 * for, and that could end up in logs, emails or other systems as control
 * sequences, are refused (never silently stripped, so what is stored is what
 * was sent). Runs on the values after URL-decoding.
 */

/**
 * Free-text fields where a line feed is a legitimate character (messages,
 * descriptions, terms). Everywhere else LF is refused too. A line break is
 * LF: CRLF and CR (what browsers send from a textarea, and Windows clients)
 * are turned into LF before these checks (toLineFeeds), in every field.
 */
export const MULTILINE_FIELDS: ReadonlySet<string> = new Set([
	"messageforfriend",
	"extrainfo",
	"message",
	"offerdescription",
	"terms",
	"sharemessage",
	"coupondetails",
	// The text of a campaign's email (admin/messages.ts, docs/messages.md): a blank line starts a paragraph.
	"body",
]);

/** CRLF and lone CR as LF, in `value` and every string nested in it (a copy; other values as they are). */
export function toLineFeeds<T>(value: T): T;
export function toLineFeeds(value: unknown): unknown {
	if (typeof value === "string") return value.includes("\r") ? value.replace(/\r\n?/g, "\n") : value;
	if (Array.isArray(value)) return value.map(toLineFeeds);
	if (typeof value === "object" && value !== null) {
		const out: Record<string, unknown> = {};
		// defineProperty: a key `__proto__` stays a plain field.
		for (const [key, item] of Object.entries(value)) {
			Object.defineProperty(out, key, { value: toLineFeeds(item), enumerable: true, writable: true, configurable: true });
		}
		return out;
	}
	return value;
}

/** Why `text` is refused in a field named `field`, or null when it is acceptable. */
export function textProblem(field: string, text: string): string | null {
	const multiline = MULTILINE_FIELDS.has(field);
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		// C0 controls except TAB (and LF in free text), and DEL.
		if ((c < 0x20 && c !== 0x09 && !(multiline && c === 0x0a)) || c === 0x7f) {
			return multiline
				? "must not contain control characters (other than tab and line feed)"
				: "must not contain control characters or line breaks";
		}
		if (c >= 0xd800 && c <= 0xdfff) {
			const pairs = c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
			if (!pairs) return "must be valid Unicode text (it holds a lone surrogate)";
			i++;
		}
	}
	return null;
}

export interface TextViolation {
	/** Dotted path of the bad value, e.g. `name` or `rewardslist.0.message`. */
	field: string;
	message: string;
}

/**
 * Every string value of `body` (nested ones too; the body's limits are
 * checked before, so the walk is bounded) that breaks the rules. The rule of
 * a nested value is the one of its nearest named field.
 */
export function findTextViolations(body: Record<string, unknown>): TextViolation[] {
	const found: TextViolation[] = [];
	const stack: { value: unknown; path: string; name: string }[] = Object.entries(body).map(([key, value]) => ({
		value,
		path: key,
		name: key,
	}));
	while (stack.length > 0) {
		const { value, path, name } = stack.pop()!;
		if (typeof value === "string") {
			const problem = textProblem(name.toLowerCase(), value);
			if (problem) found.push({ field: path, message: `${path}: ${problem}` });
		} else if (Array.isArray(value)) {
			value.forEach((item, i) => {
				stack.push({ value: item, path: `${path}.${i}`, name });
			});
		} else if (typeof value === "object" && value !== null) {
			for (const [key, item] of Object.entries(value)) stack.push({ value: item, path: `${path}.${key}`, name: key });
		}
	}
	return found.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
}

/** Throws the 400 `validation_failed` that names every bad field, when there is one. */
export function refuseBadText(body: Record<string, unknown>): void {
	const violations = findTextViolations(body);
	if (violations.length === 0) return;
	throw new ApiError(400, "validation_failed", `Invalid request. ${violations.map((v) => v.message).join("; ")}`, {
		fields: violations.map((v) => v.field),
	});
}
