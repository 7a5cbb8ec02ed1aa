import { isShownLogo } from "../domain/logo";
import { publicOrigin } from "../domain/public-origin";
import { html, raw, safeHref } from "./html";
import { headerText } from "./mail-headers";
import { fill, type Lang, type Template, type Values } from "./templates";

/**
 * An app's look on its emails (issue 34, docs/messages.md): its name (the
 * logo's text alternative), its logo (an https URL the admin API checked, or one uploaded here)
 * and its accent colour (`#rrggbb`, checked too).
 */
export interface Brand {
	name: string;
	logourl: string | null;
	accentcolor: string | null;
	/** The deployment's public origin: a logo uploaded here (served on it, domain/logo.ts) is shown too, locally over http. */
	ownorigin?: string | null;
}

/** An app's brand on its emails, with the deployment's origin for its uploaded logo. */
export const brandOf = (
	app: { name: string; logourl: string | null; accentcolor: string | null },
	env: { PUBLIC_ORIGIN?: string },
): Brand => ({
	name: app.name,
	logourl: app.logourl,
	accentcolor: app.accentcolor,
	ownorigin: publicOrigin(env),
});

/** The colour of an email's rule and links when the app set none. */
export const DEFAULT_ACCENT = "#1a56db";

/** Checked again here: only a `#rrggbb` value ever reaches a style attribute, whatever the database holds. */
const accentOf = (brand: Brand | null) =>
	brand?.accentcolor && /^#[0-9a-f]{6}$/i.test(brand.accentcolor) ? brand.accentcolor : DEFAULT_ACCENT;

/** Only an https logo is shown (a mail client would warn on, or block, anything else), or one uploaded here (https when deployed). */
const logoOf = (brand: Brand | null) => (brand && isShownLogo(brand.logourl, brand.ownorigin ?? null) ? safeHref(brand.logourl) : null);

/** Plain text with URLs turned into links (in the accent colour), every other character escaped. */
export function linkify(text: string, accent = DEFAULT_ACCENT): string {
	return text
		.split(/(https?:\/\/[^\s<>"']+)/g)
		.map((part, i) => (i % 2 === 1 ? html`<a href="${raw(safeHref(part))}" style="color:${raw(accent)}">${part}</a>` : html`${part}`))
		.join("")
		.replace(/\n/g, "<br>");
}

/** The document every email of the service is: the app's logo over a rule in its accent colour, then the body. */
export function brandedLayout(title: string, body: string, brand: Brand | null, lang: Lang = "en"): string {
	const accent = accentOf(brand);
	const logo = logoOf(brand);
	const header = logo
		? html`<p style="margin:0 0 12px"><img src="${raw(logo)}" alt="${brand?.name ?? ""}" style="max-height:48px;max-width:200px"></p>`
		: "";
	return html`<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${title}</title></head><body style="font-family:sans-serif;max-width:560px;margin:auto;color:#222"><div style="border-top:4px solid ${raw(accent)};padding-top:12px">${raw(header)}${raw(body)}</div></body></html>`;
}

/**
 * A template filled with `values`: the subject as one header line, the text
 * part as filled, and the HTML part built from that same text (each blank
 * line a paragraph, URLs as links, everything else escaped): a template's
 * text is never HTML.
 */
export function renderMessage(
	template: Template,
	values: Values,
	brand: Brand | null,
	lang: Lang,
): { subject: string; text: string; html: string } {
	const subject = headerText(fill(template.subject, values));
	const text = fill(template.body, values);
	const accent = accentOf(brand);
	const paragraphs = text
		.split(/\n{2,}/)
		.filter((p) => p.trim())
		.map((p) => `<p>${linkify(p, accent)}</p>`)
		.join("\n");
	return { subject, text, html: brandedLayout(subject, paragraphs, brand, lang) };
}
