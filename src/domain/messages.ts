/**
 * What a campaign's editable message is (docs/messages.md): its kind, its
 * language and its text. The model lives here, below the outbox that renders
 * it (outbox/templates.ts) and the D1 rows that store it (db/messages.ts).
 */

/** The emails a campaign sends whose text the campaign may set. */
export const MESSAGE_KINDS = ["outreach", "reminder"] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

/** The languages a message is written in (those of the share page, sharepage/i18n.ts). */
export const LANGS = ["en", "fr", "de", "es"] as const;
export type Lang = (typeof LANGS)[number];

export const isLang = (tag: string): tag is Lang => (LANGS as readonly string[]).includes(tag);

/** The language of a BCP 47 tag (`fr-CA` is `fr`), or null when it is not one of LANGS (or absent). */
export function langOfTag(tag: string | null | undefined): Lang | null {
	const primary = (tag ?? "").trim().toLowerCase().split(/[-_]/)[0] ?? "";
	return isLang(primary) ? primary : null;
}

export interface Template {
	subject: string;
	body: string;
}
