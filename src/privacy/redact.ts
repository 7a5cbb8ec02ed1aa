/**
 * Erasing a person from stored JSON (webhook and email payloads): every
 * string equal to one of the person's values (email, name, phone, ...,
 * compared without regard to case) becomes "", every string that contains
 * one (an email body greeting them by name) becomes ERASED. Other values,
 * amounts and ids stay, so payloads about other people keep their meaning.
 */

export const ERASED = "[erased]";

/** The values worth matching: blanks and very short strings would match too much. */
export const erasableValues = (values: (string | null | undefined)[]) => [
	...new Set(values.filter((v): v is string => typeof v === "string" && v.trim().length >= 3).map((v) => v.trim().toLowerCase())),
];

function redactString(text: string, values: string[]): string {
	const lower = text.toLowerCase();
	if (values.includes(lower.trim())) return "";
	return values.some((v) => lower.includes(v)) ? ERASED : text;
}

/** Fields that describe the person in an object that names it by `userkey` (ids too short or common to match by value). */
const PERSONAL_KEYS = new Set(["email", "useraccountid", "name", "phone", "profileimage", "paymentcustomerid", "city", "state", "country"]);

/** Who is erased: its userkey, and the values (erasableValues) matched anywhere. */
export interface Person {
	userkey: string | null;
	values: string[];
}

/** A copy of `value` with the person taken out. */
export function redact<T>(value: T, person: Person): T {
	if (typeof value === "string") return (person.values.length ? redactString(value, person.values) : value) as T;
	if (Array.isArray(value)) return value.map((item) => redact(item, person)) as T;
	if (value && typeof value === "object") {
		const self = person.userkey !== null && (value as Record<string, unknown>).userkey === person.userkey;
		return Object.fromEntries(
			Object.entries(value).map(([key, item]) => [key, self && PERSONAL_KEYS.has(key) && item !== null ? "" : redact(item, person)]),
		) as T;
	}
	return value;
}

/** Redacts a JSON text; returns null when nothing changed (so the caller writes nothing). */
export function redactJson(text: string, person: Person): string | null {
	const redacted = JSON.stringify(redact(JSON.parse(text), person));
	return redacted === text ? null : redacted;
}
