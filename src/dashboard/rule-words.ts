/**
 * A reward rule in a marketer's words (issue 48): "The referrer gets 10 USD
 * when a friend pays, from the 3rd friend 20 USD". Read from the rule as
 * typed (campaign-typed.ts), so the preview says what the form would save;
 * the engine's meaning of each field is docs/rewards.md's.
 */

import type { TypedRule } from "./campaign-typed";

/** 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st... */
export function ordinal(n: number): string {
	const tens = n % 100;
	const suffix = tens >= 11 && tens <= 13 ? "th" : (({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th");
	return `${n}${suffix}`;
}

const PAYMENT = /^(transaction|purchase|payment|paid|order|sale|subscription|charge)s?$/i;

/** What the friend does, as the rule names it: "signs up", "pays", else "has the event Renewal" (`they`: "sign up"...). */
function deed(eventname: string, they: boolean): string {
	const name = eventname.trim();
	if (/^sign ?up$/i.test(name)) return they ? "sign up" : "signs up";
	if (PAYMENT.test(name)) return they ? "pay" : "pays";
	return `${they ? "have" : "has"} the event “${name}”`;
}

const money = (raw: string, unit: string) => `${raw.trim() || "0"} ${unit.trim().toUpperCase()}`.trim();

/** The rule as a sentence, or null for a row that is no rule (no event name, or retired). */
export function ruleSentence(rule: TypedRule): string | null {
	if (rule.eventname.trim() === "" || rule.remove) return null;
	const referrer = rule.rewardusertype !== "Friend";
	const percent = rule.rewardunit.trim() === "%";
	const cap = Number(rule.maxrewardamount) > 0 ? `, at most ${rule.maxrewardamount.trim()}` : "";
	const what = percent ? `${rule.reward.trim() || "0"}% of what the friend pays${cap}` : money(rule.reward, rule.rewardunit);
	const milestone = Math.max(Number(rule.milestone) || 0, 0);
	const who = referrer ? "The referrer" : "The friend";
	let sentence: string;
	if (milestone > 0 && referrer)
		sentence = `${who} gets ${what} once, when the ${ordinal(milestone)} friend ${deed(rule.eventname, false)}`;
	else sentence = `${who} gets ${what} when ${referrer ? "a friend" : "they"} ${deed(rule.eventname, !referrer)}`;
	if (Number(rule.mintranvalue) > 0) sentence += `, on a payment of at least ${rule.mintranvalue.trim()}`;
	const times = rule.rewardfrequency.trim();
	if (times === "1" || (times === "" && /^sign ?up$/i.test(rule.eventname.trim()))) sentence += ", once per friend";
	else if (/^\d+$/.test(times) && Number(times) > 1) sentence += `, up to ${times} times per friend`;
	if (Number(rule.recurringmonths) > 0) sentence += `, for ${rule.recurringmonths.trim()} months from the friend's first`;
	const tiers = rule.tiers.filter((t) => /^\d+$/.test(t.fromcount.trim()) && t.reward.trim() !== "");
	if (referrer && milestone === 0) {
		for (const tier of tiers) {
			const unit = percent ? "%" : ` ${rule.rewardunit.trim().toUpperCase()}`;
			sentence += `, from the ${ordinal(Number(tier.fromcount))} friend ${tier.reward.trim()}${unit}`;
		}
	}
	return `${sentence}.`;
}
