/**
 * Pure translation of the dashboard's HTML forms into admin API bodies.
 * Repeated groups (rules, social actions) are numbered fields `r0_eventname`,
 * `s1_sharemessage`...; a group with its key field empty or `_remove` ticked
 * is dropped, so the blank group at the end of the form adds one when filled.
 */

import { DEFAULT_VELOCITY_THRESHOLD, FRAUD_SIGNALS } from "../fraud/signals";
import { blankShare, rowsIn, shareIdentity, typedFromForm } from "./campaign-typed";
import { type FormValues, listText, normalizeNewlines, productsText } from "./form-values";

export { type FormValues, listText, normalizeNewlines, productsText };

/** Every string value of a repeated field (checkboxes of one name). */
const all = (form: FormValues, name: string): string[] => {
	const value = form[name];
	return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === "string");
};

const text = (form: FormValues, name: string): string => {
	const value = form[name];
	const first = Array.isArray(value) ? value[0] : value;
	return typeof first === "string" ? normalizeNewlines(first) : "";
};

export const CAMPAIGN_TEXT_FIELDS = [
	"campaignname",
	"offertitle",
	"offerdescription",
	"campaignbgcolor",
	"widgetfont",
	"customdomain",
	"terms",
	"distribution",
	"growthhack",
	"currency",
] as const;

const RULE_FIELDS = [
	"rewardusertype",
	"eventname",
	"reward",
	"rewardunit",
	"rewardfrequency",
	"mintranvalue",
	"maxrewardamount",
	"categories",
	"inclusionsandexclusions",
	"recurringmonths",
	"milestone",
] as const;

/** Groups numbered 0.. while their key field is present in the form. */
function groups(form: FormValues, prefix: string, key: string): number[] {
	const found: number[] = [];
	for (let i = 0; i < 100 && `${prefix}${i}_${key}` in form; i++) found.push(i);
	return found;
}

const words = (raw: string): string[] =>
	raw
		.split(",")
		.map((w) => w.trim())
		.filter((w) => w !== "");

/** The product list back from its text: `exclude:X` excludes, `include:X` or a bare `X` includes. */
export function productsFromText(words: string[]): { type: string; productid: string }[] {
	return words.map((w) => {
		const match = /^(include|exclude)\s*:\s*(.+)$/i.exec(w);
		return match ? { type: (match[1] ?? "").toLowerCase(), productid: (match[2] ?? "").trim() } : { type: "include", productid: w };
	});
}

/** A rule's tiers as text: `3=20, 5=50` (from the 3rd reward 20, from the 5th 50). */
export function tiersText(value: unknown): string {
	if (!Array.isArray(value)) return "";
	return value.map((t: { fromcount?: unknown; reward?: unknown }) => `${t.fromcount}=${t.reward}`).join(", ");
}

/** Tiers back from their text; an entry that is not `count=reward` is reported. */
function tiersFromText(raw: string, what: string, errors: string[]): { fromcount: string; reward: string }[] {
	return words(raw).flatMap((w) => {
		const match = /^(\d+)\s*=\s*(\d+(?:\.\d+)?)$/.exec(w);
		if (!match) {
			errors.push(`${what}: "${w}" is not count=reward (e.g. 3=20).`);
			return [];
		}
		return [{ fromcount: match[1] ?? "", reward: match[2] ?? "" }];
	});
}

/** A list field back from the form: the comma-separated words, or the hidden structured value it kept (ListField). */
function listValue(form: FormValues, name: string, what: string, errors: string[]): unknown[] | null {
	const kept = text(form, `${name}_kept`);
	if (kept) {
		try {
			const value: unknown = JSON.parse(kept);
			return Array.isArray(value) ? value : [value];
		} catch {
			errors.push(`${what}: the kept value is not JSON; reload the page.`);
			return null;
		}
	}
	const list = words(text(form, name));
	return list.length > 0 ? list : null;
}

/** The campaign body of the admin API, and the errors the form itself can tell. */
export function campaignFromForm(form: FormValues): {
	body: Record<string, unknown>;
	errors: string[];
	/** The form row of each rule and social action sent, by position (for formErrorText). */
	rows: { rules: number[]; actions: number[]; tiers: number[][] };
} {
	const errors: string[] = [];
	const body: Record<string, unknown> = {};
	for (const field of CAMPAIGN_TEXT_FIELDS) body[field] = text(form, field);
	const start = text(form, "campaignstartdate").trim();
	if (start) body.campaignstartdate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(start) ? `${start}:00Z` : start;
	// The form always has the field: empty means no end (null), so an end can also be removed.
	if (form.campaignenddate !== undefined) {
		const end = text(form, "campaignenddate").trim();
		body.campaignenddate = end === "" ? null : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(end) ? `${end}:00Z` : end;
	}
	body.rewardtype = text(form, "rewardtype");
	body.holddays = text(form, "holddays") || "0";
	body.autoapprove = text(form, "autoapprove") === "on";
	body.showleaderboard = text(form, "showleaderboard") === "on";
	if (form.leaderboardnames !== undefined) body.leaderboardnames = text(form, "leaderboardnames");
	// Unticked checkboxes send nothing: the hidden `fraudsettings` tells "none ticked" from a form without the section.
	if (text(form, "fraudsettings") === "1") {
		const ticked = all(form, "suspicioussignals");
		// Every signal ticked is the default (null), which also covers signals added later (docs/fraud.md).
		body.suspicioussignals = FRAUD_SIGNALS.every((code) => ticked.includes(code)) ? null : ticked;
		body.velocitythreshold = text(form, "velocitythreshold").trim() || String(DEFAULT_VELOCITY_THRESHOLD);
	}
	const rules = groups(form, "r", "eventname").filter(
		(i) => text(form, `r${i}_eventname`).trim() !== "" && text(form, `r${i}_remove`) !== "on",
	);
	const tiers: number[][] = [];
	body.rewardrules = rules.map((i) => {
		const rule: Record<string, unknown> = {};
		for (const field of RULE_FIELDS) rule[field] = text(form, `r${i}_${field}`);
		const ruleid = text(form, `r${i}_ruleid`);
		if (ruleid) rule.ruleid = /^\d+$/.test(ruleid) ? Number(ruleid) : ruleid;
		for (const numeric of ["mintranvalue", "maxrewardamount"]) if (rule[numeric] === "") rule[numeric] = "0";
		// An empty frequency takes the admin API's default for the rule.
		if (rule.rewardfrequency === "") delete rule.rewardfrequency;
		const categories = listValue(form, `r${i}_categories`, `Rule ${i + 1} categories`, errors);
		rule.categories = categories;
		const products = listValue(form, `r${i}_inclusionsandexclusions`, `Rule ${i + 1} inclusions and exclusions`, errors) ?? [];
		// Typed words become entries; a kept structured value goes back as it was.
		rule.inclusionsandexclusions = products.every((p) => typeof p === "string") ? productsFromText(products) : products;
		// Tiers as rows (from friend N: reward), blank rows skipped; the older `count=reward` text still read when sent.
		const tierRows = rowsIn(form, `r${i}_t`, ["fromcount", "reward"])
			.map((k) => ({ k, fromcount: text(form, `r${i}_t${k}_fromcount`).trim(), reward: text(form, `r${i}_t${k}_reward`).trim() }))
			.filter((t) => t.fromcount !== "" || t.reward !== "");
		tiers.push(tierRows.map((t) => t.k));
		rule.tiers =
			tierRows.length > 0
				? tierRows.map(({ fromcount, reward }) => ({ fromcount, reward }))
				: tiersFromText(text(form, `r${i}_tiers`), `Rule ${i + 1} tiers`, errors);
		for (const numeric of ["recurringmonths", "milestone"]) if (rule[numeric] === "") rule[numeric] = "0";
		return rule;
	});
	// Share buttons by network (campaign-typed.ts): a row without a network, or ticked for removal, adds none.
	const shares = typedFromForm(form).shares;
	const actions = shares.flatMap((share, i) => (share.network !== "" && !share.remove ? [i] : []));
	body.socialactions = actions.map((i) => {
		const share = shares[i] ?? blankShare();
		const action: Record<string, unknown> = { ...shareIdentity(share) };
		for (const field of ["sharemessage", "sharetitle", "shareimageurl", "displayorder"] as const) action[field] = share[field];
		for (const numeric of ["displayorder", "sharemessagetype"]) if (action[numeric] === "") action[numeric] = "0";
		return action;
	});
	return { body, errors, rows: { rules, actions, tiers } };
}

/**
 * Coupon codes from a textarea (one per line) and / or a CSV file: the first
 * column of each row; a header row named `coupon` or `code` is skipped.
 * Optional further columns: couponname, coupondetails.
 */
export function couponsFromText(textarea: string, csv: string): { coupon: string; couponname?: string; coupondetails?: string }[] {
	const out: { coupon: string; couponname?: string; coupondetails?: string }[] = [];
	for (const line of textarea.split(/\r?\n/)) if (line.trim()) out.push({ coupon: line.trim() });
	csv.split(/\r?\n/).forEach((line, index) => {
		const cells = splitCsvLine(line);
		const code = cells[0]?.trim() ?? "";
		if (!code || (index === 0 && /^(coupon|code)s?$/i.test(code))) return;
		out.push({
			coupon: code,
			...(cells[1] ? { couponname: cells[1].trim() } : {}),
			...(cells[2] ? { coupondetails: cells[2].trim() } : {}),
		});
	});
	const seen = new Set<string>();
	return out.filter((c) => !seen.has(c.coupon) && seen.add(c.coupon));
}

/** One CSV line into cells ("quoted, cells" and "" escapes). */
export function splitCsvLine(line: string): string[] {
	const cells: string[] = [];
	let cell = "";
	let quoted = false;
	for (let i = 0; i < line.length; i++) {
		const ch = line[i];
		if (quoted && ch === '"' && line[i + 1] === '"') {
			cell += '"';
			i++;
		} else if (ch === '"') {
			quoted = !quoted;
		} else if (ch === "," && !quoted) {
			cells.push(cell);
			cell = "";
		} else {
			cell += ch;
		}
	}
	cells.push(cell);
	return cells;
}

/** A CSV cell, quoted when it must be; text that a spreadsheet would run as a formula is prefixed with '. */
export const csvCell = (value: unknown): string => {
	if (typeof value === "number") return String(value);
	const raw = value === null || value === undefined ? "" : String(value);
	const s = /^[=+\-@\t\r]/.test(raw) ? `'${raw}` : raw;
	return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};
