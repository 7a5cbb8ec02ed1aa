import type { Campaign, RewardRule } from "../db/campaigns";
import type { User } from "../db/users";
import { checkSignals } from "../fraud/check";
import { commentWithSignals, type FraudReview } from "../fraud/signals";
import type { FriendSnapshot, RewardGrant } from "../ledger/types";
import { fromHundredths, percentOfHundredths, toHundredths } from "./money";
import { type ProductFacts, productMatches, productRestriction } from "./products";
import { withinRecurringWindow } from "./windows";

/** A recorded conversion event, as the rules see it. */
export interface ConversionEvent {
	customid: string;
	eventname: string;
	transactionvalue: number | null;
	/** What was bought (optional): rules with `categories` or `inclusionsandexclusions` fire only for matching products. */
	productid?: string | null;
	category?: string | null;
	/** When the friend's first event of this name in the campaign was recorded (ISO), before this one; null: this is the first. */
	firstEventAt?: string | null;
	/** The app's IANA time zone: recurring windows count its calendar months. */
	timezone?: string;
}

/** Whose ledger a grant goes to. */
export interface OwnedGrant {
	owner: "friend" | "referrer";
	grant: RewardGrant;
}

/**
 * Rounds half-up to hundredths (cents), the precision rewards are kept in.
 * Delegates to money.ts, which scales the decimal text: adding EPSILON to the
 * float is not enough above ~8 (10.075 came out 10.07).
 */
export function roundToHundredths(value: number): number {
	const hundredths = toHundredths(value);
	return hundredths === null ? value : fromHundredths(hundredths);
}

/**
 * Why the campaign gives nothing at `now`: not started yet, or ended; null
 * while it runs. An event outside those dates is recorded with no rewards.
 */
export function campaignClosed(campaign: Pick<Campaign, "campaignstartdate" | "campaignenddate">, now: Date): string | null {
	const t = now.getTime();
	if (campaign.campaignstartdate && Date.parse(campaign.campaignstartdate) > t) return `starts on ${campaign.campaignstartdate}`;
	if (campaign.campaignenddate && Date.parse(campaign.campaignenddate) <= t) return `ended on ${campaign.campaignenddate}`;
	return null;
}

/** True when the rule's reward is a percent of the transaction value. */
export const isPercentRule = (rule: Pick<RewardRule, "rewardunit">) => rule.rewardunit.trim() === "%";

/**
 * The amount a rule gives for a transaction value, or null when it does not
 * fire: below `mintranvalue`, or a percent rule without a value. Percent
 * amounts are computed exactly in hundredths (no float before rounding) and
 * capped by `maxrewardamount` when it is above 0.
 */
export function ruleAmount(rule: RewardRule, transactionvalue: number | null): number | null {
	if (rule.mintranvalue > 0 && (transactionvalue === null || transactionvalue < rule.mintranvalue)) return null;
	if (!isPercentRule(rule)) return roundToHundredths(rule.reward);
	if (transactionvalue === null) return null;
	const amount = percentOfHundredths(rule.reward, transactionvalue);
	const cap = rule.maxrewardamount > 0 ? toHundredths(rule.maxrewardamount) : null;
	return fromHundredths(cap === null ? amount : Math.min(amount, cap));
}

/** True when the campaign's `rewardtype` (0 none, 1 referrer, 2 friend, 3 both) lets rules of this user type fire. */
export function rewardTypeAllows(rewardtype: number, usertype: RewardRule["rewardusertype"]): boolean {
	if (rewardtype === 3) return true;
	return (rewardtype === 1 && usertype === "Referrer") || (rewardtype === 2 && usertype === "Friend");
}

/** The rules matching an event name (case-insensitive). */
export const matchingRules = (rules: RewardRule[], eventname: string) =>
	rules.filter((rule) => rule.eventname.trim().toLowerCase() === eventname.trim().toLowerCase());

/**
 * The rules that fire for an event: its name matches, and so does its
 * product under the rule's `categories` and `inclusionsandexclusions`
 * (rewards/products.ts). An event naming no product fires only rules that
 * restrict neither, as every rule did before these fields had a meaning.
 */
export function firingRules(rules: RewardRule[], event: Pick<ConversionEvent, "eventname" | "productid" | "category">): RewardRule[] {
	const product: ProductFacts = { productid: event.productid ?? null, category: event.category ?? null };
	return matchingRules(rules, event.eventname).filter((rule) =>
		productMatches(productRestriction(rule.categories, rule.inclusionsandexclusions), product),
	);
}

/** Status, hold and comment of a new reward under the campaign's review settings. */
export function initialStatus(
	campaign: Pick<Campaign, "autoapprove" | "holddays">,
	suspicion: string | null,
	now: Date,
): Pick<RewardGrant, "status" | "holdUntil" | "comment"> {
	if (suspicion) return { status: "Suspicious", holdUntil: null, comment: suspicion };
	if (campaign.holddays > 0) {
		const holdUntil = campaign.autoapprove ? new Date(now.getTime() + campaign.holddays * 86_400_000).toISOString() : null;
		return { status: "UnderReview", holdUntil, comment: `On hold for ${campaign.holddays} day(s).` };
	}
	if (!campaign.autoapprove) return { status: "UnderReview", holdUntil: null, comment: "Awaiting review." };
	return { status: "Approved", holdUntil: null, comment: null };
}

/** The fields of a user the rules and the fraud checks read (a conversion reads them from the user's ledger: issue 49). */
export type RuleUser = Pick<User, "userkey" | "email" | "name" | "profileimage" | "phone" | "paymentcustomerid" | "isexistinguser">;

const snapshot = (user: RuleUser): FriendSnapshot => ({
	userkey: user.userkey,
	email: user.email,
	name: user.name,
	profileimage: user.profileimage,
});

/**
 * The rewards one event earns (decisions.md §4): rules of the campaign whose
 * event name matches fire, gated by the campaign's `rewardtype`; `Friend`
 * rules reward the friend when it has a referrer, `Referrer` rules reward the
 * referrer; an existing user (and so its referrer) earns nothing. `fraud` is
 * the review of the event's fraud signals (src/fraud/check.ts; without it,
 * only the profile signals are checked). Each grant's
 * key is `${customid}:${ruleid}`, so replaying the event makes the same grants.
 * `rewardfrequency` is enforced by the ledger that receives the grant.
 */
export function rewardsForEvent(
	campaign: Campaign,
	rules: RewardRule[],
	friend: RuleUser,
	referrer: RuleUser | null,
	event: ConversionEvent,
	now: Date,
	fraud?: FraudReview,
): OwnedGrant[] {
	if (friend.isexistinguser || !referrer || campaign.rewardtype === 0 || campaignClosed(campaign, now)) return [];
	const signals = fraud ?? checkSignals(friend, referrer, campaign);
	const status = initialStatus(campaign, signals.suspicious ? signals.comment : null, now);
	const review = { ...status, comment: commentWithSignals(status.comment, signals), fraudsignals: signals.signals };
	const grants: OwnedGrant[] = [];
	for (const rule of firingRules(rules, event)) {
		if (!rewardTypeAllows(campaign.rewardtype, rule.rewardusertype)) continue;
		if (!withinRecurringWindow(rule.recurringmonths, event.firstEventAt ?? null, now.toISOString(), event.timezone ?? "UTC")) continue;
		const amount = ruleAmount(rule, event.transactionvalue);
		// A tier's amount is computed like the rule's own; the referrer's ledger picks one by its count (rewards/tiers.ts).
		const tiers =
			rule.rewardusertype === "Referrer"
				? rule.tiers.map((t) => ({
						fromcount: t.fromcount,
						amount: ruleAmount({ ...rule, reward: t.reward }, event.transactionvalue) ?? 0,
					}))
				: [];
		if (amount === null || (amount <= 0 && tiers.every((t) => t.amount <= 0))) continue;
		grants.push({
			owner: rule.rewardusertype === "Friend" ? "friend" : "referrer",
			grant: {
				key: `${event.customid}:${rule.ruleid}`,
				ruleid: rule.ruleid,
				rewardfrequency: rule.rewardfrequency,
				usertype: rule.rewardusertype,
				amount,
				rewardunit: isPercentRule(rule) ? campaign.currency : rule.rewardunit,
				percent: isPercentRule(rule),
				rewardtype: campaign.distribution,
				campaignid: campaign.campaignid,
				campaignname: campaign.campaignname,
				growthhack: campaign.growthhack,
				eventname: event.eventname,
				customid: event.customid,
				friend: snapshot(friend),
				...review,
				...(tiers.length > 0 ? { tiers } : {}),
				// A milestone pays once per referrer (ledger/milestones.ts): the event only counts its friend there.
				...(rule.milestone > 0 && rule.rewardusertype === "Referrer" ? { milestone: rule.milestone, rewardfrequency: 0 } : {}),
			},
		});
	}
	return grants;
}
