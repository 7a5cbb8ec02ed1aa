/**
 * Editable message templates (issue 34, docs/messages.md): the text of an
 * email a campaign sends, in plain text with `{{variable}}` placeholders.
 * A template's text is never HTML: the HTML part is built from the filled
 * text with every character escaped (emails.ts), so an operator cannot
 * inject markup and a user's name cannot either.
 */

import { isLang, LANGS, type Lang, langOfTag, MESSAGE_KINDS, type MessageKind, type Template } from "../domain/messages";

export { isLang, LANGS, type Lang, langOfTag, MESSAGE_KINDS, type MessageKind, type Template };

/** What each variable stands for, per kind (shown by the editor and the admin API, docs/messages.md). */
export const VARIABLES: Record<MessageKind, Record<string, string>> = {
	outreach: {
		referrername: "the recipient's name (the referrer); empty when unknown",
		sharelink: "the recipient's share link",
		referralcode: "the recipient's referral code",
		reward: "what the referrer earns by the campaign's first Referrer rule, e.g. 10 USD or 5%",
		offertitle: "the campaign's offer title",
		offerdescription: "the campaign's offer description",
		sharemessage: "the campaign's Mail share message, its SHARE_URL and SHARE_CODE filled in",
		campaignname: "the campaign's name",
		appname: "the app's name",
	},
	reminder: {
		friendname: "the recipient's name (the friend); empty when unknown",
		referrername: "the referrer's name, or 'Your friend' in the recipient's language",
		message: "the referrer's message (messageforfriend); empty when none",
		sharelink: "the referrer's share link",
		referralcode: "the referrer's referral code",
		reward: "what the friend earns by the campaign's first Friend rule, e.g. 10 USD or 5%",
		offertitle: "the campaign's offer title",
		offerdescription: "the campaign's offer description",
		landingurl: "the app's landing URL",
		campaignname: "the campaign's name",
		appname: "the app's name",
	},
};

export const MAX_SUBJECT = 200;
export const MAX_BODY = 5000;

/** `{{ name }}`: a variable, spaces inside the braces allowed. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** A problem of a template's text: which field, and why (the admin API's 400 names both). */
export interface TemplateProblem {
	field: "subject" | "body";
	message: string;
	/** The unknown variables, when that is the problem. */
	unknown?: string[];
}

/** The problems of one text: unknown variables, or braces that open no variable. */
function problemsOf(kind: MessageKind, field: TemplateProblem["field"], text: string): TemplateProblem[] {
	const known = VARIABLES[kind];
	const unknown = [...text.matchAll(PLACEHOLDER)].map((m) => m[1] ?? "").filter((name) => !Object.hasOwn(known, name));
	const problems: TemplateProblem[] = [];
	if (unknown.length > 0) {
		const names = [...new Set(unknown)];
		problems.push({
			field,
			unknown: names,
			message: `unknown variable ${names.map((n) => `{{${n}}}`).join(", ")}; the ${kind} email knows ${Object.keys(known)
				.map((n) => `{{${n}}}`)
				.join(", ")}`,
		});
	}
	// What is left after the variables must hold no "{{" or "}}": a typo like {{sharelink} is refused, not sent as is.
	if (/\{\{|\}\}/.test(text.replace(PLACEHOLDER, ""))) {
		problems.push({ field, message: "has '{{' or '}}' that is not part of a {{variable}}" });
	}
	return problems;
}

/** Every problem of a template (empty: it may be saved). */
export function checkTemplate(kind: MessageKind, template: Template): TemplateProblem[] {
	const problems: TemplateProblem[] = [];
	if (!template.subject.trim()) problems.push({ field: "subject", message: "is required" });
	else if (template.subject.length > MAX_SUBJECT) problems.push({ field: "subject", message: `must be at most ${MAX_SUBJECT} characters` });
	if (!template.body.trim()) problems.push({ field: "body", message: "is required" });
	else if (template.body.length > MAX_BODY) problems.push({ field: "body", message: `must be at most ${MAX_BODY} characters` });
	return [...problems, ...problemsOf(kind, "subject", template.subject), ...problemsOf(kind, "body", template.body)];
}

export type Values = Partial<Record<string, string | null>>;

/**
 * Fills the variables of one text. A line that uses a variable without a
 * value (no name known, no message) is left out whole, so no sentence is
 * sent half filled ("Hi ,"); a line without variables always stays.
 * An unknown variable (only in a template stored before a check) renders
 * empty, which also drops its line.
 */
export function fill(text: string, values: Values): string {
	const lines: string[] = [];
	for (const line of text.split("\n")) {
		let missing = false;
		const filled = line.replace(PLACEHOLDER, (_, name: string) => {
			const value = Object.hasOwn(values, name) ? values[name] : null;
			if (!value) missing = true;
			return value ?? "";
		});
		if (!missing) lines.push(filled);
	}
	// Dropped lines may leave runs of blank lines: one blank line separates paragraphs.
	return lines
		.join("\n")
		.replace(/\n{3,}/g, "\n\n")
		.trim();
}

/**
 * The template a recipient gets: the campaign's in their language, else the
 * campaign's in English, else the service's default in their language (the
 * defaults exist in every language). `custom` holds what the campaign saved.
 */
export function pickTemplate(
	custom: ReadonlyMap<Lang, Template>,
	defaults: Record<Lang, Template>,
	lang: Lang,
): { template: Template; lang: Lang; custom: boolean } {
	const own = custom.get(lang);
	if (own) return { template: own, lang, custom: true };
	const english = custom.get("en");
	if (english) return { template: english, lang: "en", custom: true };
	return { template: defaults[lang], lang, custom: false };
}

/** A rule's reward as a recipient reads it: `10 USD`, `12.5 EUR`, `5%`. */
export function rewardText(rule: { reward: number; rewardunit: string } | undefined): string {
	if (!rule) return "";
	return rule.rewardunit === "%" ? `${rule.reward}%` : `${rule.reward} ${rule.rewardunit}`;
}
