/**
 * What the campaign builder tells before anything is sent (issue 48): every
 * mistake at once, each on the field it is about (by the field's form name),
 * in words that state the rule ("0 to 365 days"), never the type; and the
 * warnings an operator confirms to save anyway (an end in the past, no share
 * button). The admin API checks the same body again (admin/schemas.ts); its
 * answer is mapped onto the fields by apiFieldName when it still refuses.
 */

import { normalizeUnit } from "../domain/units";
import { liveShares, type TypedCampaign, type TypedRule } from "./campaign-typed";

export interface FieldProblem {
	/** The form field's name (its input is `f-<name>`). */
	field: string;
	message: string;
}

export type WarningId = "pastend" | "noshare";
export interface Warning {
	id: WarningId;
	message: string;
}

const WHOLE = /^\d+$/;
const DECIMAL = /^\d+(\.\d{1,2})?$/;
const LOCAL_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const HOST = /^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(:\d{1,5})?$/;

/** A whole number from `min` to `max` (empty allowed when `optional`), else the rule in words. */
function whole(raw: string, min: number, max: number, words: string, optional = true): string | null {
	const v = raw.trim();
	if (v === "" && optional) return null;
	if (!WHOLE.test(v) || Number(v) < min || Number(v) > max) return words;
	return null;
}

/** An amount of 0 or more with at most two decimals (money is kept in hundredths). */
function amount(raw: string, words: string, optional = true, positive = false): string | null {
	const v = raw.trim();
	if (v === "" && optional) return null;
	if (!DECIMAL.test(v) || Number(v) > 1e9 || (positive && Number(v) <= 0)) return words;
	return null;
}

/** Every problem of the typed campaign, in the order of the form; and the warnings not yet confirmed. */
export function checkCampaign(
	typed: TypedCampaign,
	opts: { now: Date; storedEnd?: string | null; storedStart?: string | null },
): { problems: FieldProblem[]; warnings: Warning[] } {
	const problems: FieldProblem[] = [];
	const add = (field: string, message: string | null) => {
		if (message) problems.push({ field, message });
	};
	const t = typed.text;
	add("campaignname", t.campaignname.trim() === "" ? "Give the campaign a name (up to 200 characters)." : null);
	add("campaignname", t.campaignname.length > 200 ? "The name has at most 200 characters." : null);
	add("offertitle", t.offertitle.length > 500 ? "The offer title has at most 500 characters." : null);
	add("offerdescription", t.offerdescription.length > 5000 ? "The offer description has at most 5,000 characters." : null);
	const start = t.campaignstartdate.trim();
	const end = t.campaignenddate.trim();
	add("campaignstartdate", start && !LOCAL_DATE.test(start) ? "The start is a date and time, such as 2026-12-01 09:00." : null);
	add(
		"campaignenddate",
		end && !LOCAL_DATE.test(end) ? "The end is a date and time, such as 2027-01-31 23:59, or empty for no end." : null,
	);
	const warnings: Warning[] = [];
	if (LOCAL_DATE.test(end)) {
		const endAt = Date.parse(`${end}:00Z`);
		// An empty start keeps a saved campaign's start (the admin API changes only what is sent); a new one starts now.
		const startAt = LOCAL_DATE.test(start)
			? Date.parse(`${start}:00Z`)
			: opts.storedStart
				? Date.parse(opts.storedStart)
				: opts.now.getTime();
		if (endAt <= startAt) {
			add(
				"campaignenddate",
				LOCAL_DATE.test(start) || opts.storedStart
					? "The end must be after the start: the campaign would never run."
					: "The end must be in the future: without a start the campaign starts now.",
			);
		} else if (endAt <= opts.now.getTime() && end !== (opts.storedEnd ?? "").slice(0, 16)) {
			warnings.push({
				id: "pastend",
				message: `The end (${end.replace("T", " ")} UTC) is in the past: from then on no event earns a reward.`,
			});
		}
	}
	add("rewardtype", /^[0-3]$/.test(t.rewardtype.trim()) ? null : "Choose who can be rewarded.");
	add("holddays", whole(t.holddays, 0, 365, "Hold days: 0 to 365 days (0: no hold)."));
	add(
		"velocitythreshold",
		whole(t.velocitythreshold, 0, 1_000_000, "The velocity threshold is 0 or more sign-ups per hour (0 turns it off)."),
	);
	add("distribution", ["InstoreCredits", "Coupon", "Stripe"].includes(t.distribution) ? null : "Choose how rewards are paid.");
	add("growthhack", t.growthhack.trim() === "" || t.growthhack.length > 100 ? "The growth hack is a name of 1 to 100 characters." : null);
	add("currency", normalizeUnit(t.currency) ? null : "The currency is a code such as USD or EUR.");
	add("campaignbgcolor", /^#[0-9a-fA-F]{6}$/.test(t.campaignbgcolor) ? null : "The background is a colour such as #ffffff.");
	add("widgetfont", t.widgetfont.length > 100 ? "The font name has at most 100 characters." : null);
	const domain = t.customdomain.trim().toLowerCase();
	add("customdomain", domain && !HOST.test(domain) ? "The share domain is a host name such as refer.example.com, or empty." : null);
	typed.rules.forEach((rule, i) => {
		for (const p of checkRule(rule, `r${i}_`)) problems.push(p);
	});
	typed.shares.forEach((share, i) => {
		if (share.network === "" || share.remove) return;
		const p = `s${i}_`;
		add(`${p}sharemessage`, share.sharemessage.length > 5000 ? "The message has at most 5,000 characters." : null);
		add(`${p}sharetitle`, share.sharetitle.length > 500 ? "The title has at most 500 characters." : null);
		add(`${p}shareimageurl`, share.shareimageurl.length > 2000 ? "The image address has at most 2,000 characters." : null);
		add(`${p}displayorder`, whole(share.displayorder, 0, 1_000_000, "The position is 0 or more (lower comes first)."));
	});
	if (liveShares(typed).length === 0) {
		warnings.push({
			id: "noshare",
			message: "No share button: the share page will show the link and code only, with no way to share it in one tap.",
		});
	}
	return { problems, warnings: warnings.filter((w) => !typed.confirmed.includes(w.id)) };
}

/** A rule row's problems: an empty row is no rule; a half-filled one says what is missing. */
function checkRule(rule: TypedRule, p: string): FieldProblem[] {
	const out: FieldProblem[] = [];
	const add = (field: string, message: string | null) => {
		if (message) out.push({ field: `${p}${field}`, message });
	};
	if (rule.remove) return out;
	const named = rule.eventname.trim() !== "";
	const tiers = rule.tiers.map((t, k) => ({ ...t, k })).filter((t) => t.fromcount.trim() !== "" || t.reward.trim() !== "");
	if (!named) {
		if (rule.reward.trim() !== "" || tiers.length > 0)
			add("eventname", "Name the event that earns this reward (Signup, or the event your app sends for a payment), or clear the row.");
		return out;
	}
	add("eventname", rule.eventname.length > 100 ? "The event name has at most 100 characters." : null);
	const percent = rule.rewardunit.trim() === "%";
	add("reward", amount(rule.reward, "The reward is an amount of 0 or more, such as 10 or 2.50.", false));
	add(
		"rewardunit",
		percent || normalizeUnit(rule.rewardunit)
			? null
			: "The unit is a currency such as USD, points such as POINTS, or % of the amount paid.",
	);
	add("rewardfrequency", whole(rule.rewardfrequency, 0, 1_000_000, "Times per friend: 0 or more (0: every time)."));
	add("mintranvalue", amount(rule.mintranvalue, "The minimum payment is an amount of 0 or more."));
	add("maxrewardamount", amount(rule.maxrewardamount, "The cap is an amount of 0 or more (0: no cap)."));
	add("recurringmonths", whole(rule.recurringmonths, 0, 1200, "Months: 0 to 1200 (0: no window)."));
	add("milestone", whole(rule.milestone, 0, 1_000_000, "The milestone is a friend number, 0 or more (0: none)."));
	const referrer = rule.rewardusertype === "Referrer";
	const milestone = WHOLE.test(rule.milestone.trim()) ? Number(rule.milestone.trim()) : 0;
	if (milestone > 0 && !referrer) add("milestone", "A milestone rewards the referrer: choose the referrer, or set it to 0.");
	else if (milestone > 0 && percent) add("milestone", "A milestone pays a fixed amount, not a % of a payment.");
	else if (milestone > 0 && tiers.length > 0) add("milestone", "A milestone pays once: clear the tiers, or set it to 0.");
	let previous = 1;
	for (const tier of tiers) {
		const at = `t${tier.k}_`;
		if (!referrer) {
			add(`${at}fromcount`, "Tiers reward the referrer for more friends: choose the referrer, or clear the tiers.");
			continue;
		}
		const from = tier.fromcount.trim();
		if (!WHOLE.test(from) || Number(from) < 2 || Number(from) > 1_000_000)
			add(`${at}fromcount`, "From friend: a friend number, 2 or more.");
		else if (Number(from) <= previous) add(`${at}fromcount`, `Each tier starts after the one above it: a friend number above ${previous}.`);
		else previous = Number(from);
		add(`${at}reward`, amount(tier.reward, "The tier's reward is an amount above 0, such as 20.", false, true));
	}
	if (tiers.length > 0 && referrer && DECIMAL.test(rule.reward.trim()) && Number(rule.reward) <= 0) {
		add("reward", "A tiered rule starts with a reward above 0.");
	}
	return out;
}

/**
 * The form field an admin API error names (`rewardrules.1.tiers.0.fromcount`
 * for the rule and tier sent at those positions), or null when none matches.
 */
export function apiFieldName(field: string, rows: { rules: number[]; actions: number[]; tiers: number[][] }): string | null {
	const rule = /^rewardrules\.(\d+)(?:\.tiers\.(\d+)(?:\.(fromcount|reward))?|\.(\w+))?/.exec(field);
	if (rule) {
		const row = rows.rules[Number(rule[1])];
		if (row === undefined) return null;
		if (rule[2] !== undefined) {
			const tier = rows.tiers[Number(rule[1])]?.[Number(rule[2])];
			return tier === undefined ? `r${row}_eventname` : `r${row}_t${tier}_${rule[3] ?? "fromcount"}`;
		}
		if (rule[4] === "tiers") return `r${row}_t0_fromcount`;
		return `r${row}_${rule[4] ?? "eventname"}`;
	}
	const action = /^socialactions\.(\d+)(?:\.(\w+))?/.exec(field);
	if (action) {
		const row = rows.actions[Number(action[1])];
		if (row === undefined) return null;
		const name = action[2] ?? "network";
		return `s${row}_${["socialactionid", "socialactionname", "sharemessagetype"].includes(name) ? "network" : name}`;
	}
	return /^\w+$/.test(field) ? field : null;
}
