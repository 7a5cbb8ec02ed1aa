import type { Campaign, RewardRule } from "../db/campaigns";
import { fromHundredths, toHundredths } from "./money";
import type { FriendSnapshot, RewardGrant } from "./types";

/**
 * The rules engine (decisions.md §4): which rewards a conversion event of a
 * user (the "friend") gives, to whom and how much. Pure: the caller loads
 * campaign, users and fraud verdict, and hands each grant to the ledger of
 * its user, where idempotency and rewardfrequency are enforced.
 */

/** A user as the rules need it. */
export type RulesUser = FriendSnapshot;

export interface RulesInput {
	campaign: Pick<Campaign, "campaignid" | "campaignname" | "rewardtype" | "distribution" | "holddays" | "autoapprove" | "growthhack"> & {
		rewardrules: RewardRule[];
	};
	/** The user who did the event. */
	friend: RulesUser & { isexistinguser: boolean };
	/** The friend's referrer, or null when the friend was not referred. */
	referrer: RulesUser | null;
	event: {
		customid: string;
		eventname: string;
		transactionvalue?: number | null;
		/** The growth hack sent with the event; the campaign's when absent. */
		growthhack?: string;
	};
	now: Date;
	/** Set when a fraud check flagged the event: its rewards are Suspicious, with this as comment. */
	flagged?: string | null;
}

/** A grant and the user whose ledger receives it. */
export interface LedgerGrant {
	userkey: string;
	grant: RewardGrant;
}

export type RulesResult =
	| { ok: true; grants: LedgerGrant[] }
	| { ok: false; error: { code: "transactionvalue_required"; ruleid: number; message: string } };

const DAY_MS = 86_400_000;

/** True when the campaign's rewardtype (0 none, 1 referrer, 2 friend, 3 both) lets rules of `usertype` fire. */
export function rewardTypeAllows(rewardtype: number, usertype: RewardRule["rewardusertype"]): boolean {
	return usertype === "Referrer" ? rewardtype === 1 || rewardtype === 3 : rewardtype === 2 || rewardtype === 3;
}

/** True when the rule's amount or threshold depends on the transaction value. */
export function needsTransactionValue(rule: Pick<RewardRule, "rewardunit" | "mintranvalue">): boolean {
	return rule.rewardunit.trim() === "%" || rule.mintranvalue > 0;
}

/**
 * The amount a rule gives, in hundredths: `reward` as is, or for a `%`
 * rule that percent of the transaction value, capped by maxrewardamount when
 * above 0 (the cap belongs to percent rules, whose amount is otherwise
 * unbounded). Rounded half-up. Returns 0 when the rule gives nothing.
 */
export function ruleAmount(rule: Pick<RewardRule, "reward" | "rewardunit" | "maxrewardamount">, transactionvalue: number | null): number {
	if (rule.rewardunit.trim() !== "%") return Math.max(0, toHundredths(rule.reward) ?? 0);
	if (transactionvalue === null) return 0;
	// Percent of a value in hundredths, rounded once at the end.
	const value = toHundredths(transactionvalue) ?? 0;
	let amount = toHundredths((value * rule.reward) / 10_000) ?? 0;
	const cap = toHundredths(rule.maxrewardamount) ?? 0;
	if (cap > 0) amount = Math.min(amount, cap);
	return Math.max(0, amount);
}

/** The status, hold and comment a new reward starts with. */
export function initialStatus(
	campaign: Pick<Campaign, "autoapprove" | "holddays">,
	now: Date,
	flagged: string | null | undefined,
): Pick<RewardGrant, "status" | "holdUntil" | "comment"> {
	if (flagged) return { status: "Suspicious", holdUntil: null, comment: flagged };
	if (!campaign.autoapprove) return { status: "UnderReview", holdUntil: null, comment: null };
	if (campaign.holddays > 0)
		return { status: "UnderReview", holdUntil: new Date(now.getTime() + campaign.holddays * DAY_MS).toISOString(), comment: null };
	return { status: "Approved", holdUntil: null, comment: null };
}

/**
 * The grants a conversion event gives. Rules of the campaign whose eventname
 * matches (case-insensitive) fire: Friend rules reward the friend when it has
 * a referrer, Referrer rules reward the referrer; the campaign's rewardtype
 * gates both. An existing user (isexistinguser) earns nothing for anyone. A
 * rule does not fire below its mintranvalue; a rule that needs the
 * transaction value when none was sent fails the whole event, so the caller
 * can refuse it before recording anything.
 */
export function rewardsForEvent(input: RulesInput): RulesResult {
	const { campaign, friend, referrer, event } = input;
	if (friend.isexistinguser || !referrer) return { ok: true, grants: [] };
	const tv = event.transactionvalue ?? null;
	const hasValue = tv !== null && Number.isFinite(tv);
	const name = event.eventname.trim().toLowerCase();
	const start = initialStatus(campaign, input.now, input.flagged);
	const snapshot: FriendSnapshot = { userkey: friend.userkey, email: friend.email, name: friend.name, profileimage: friend.profileimage };
	const grants: LedgerGrant[] = [];
	for (const rule of campaign.rewardrules) {
		if (rule.eventname.trim().toLowerCase() !== name) continue;
		if (!rewardTypeAllows(campaign.rewardtype, rule.rewardusertype)) continue;
		if (needsTransactionValue(rule) && !hasValue) {
			return {
				ok: false,
				error: {
					code: "transactionvalue_required",
					ruleid: rule.ruleid,
					message: `transactionvalue is required for ${rule.eventname} rewards`,
				},
			};
		}
		if (hasValue && tv < rule.mintranvalue) continue;
		const amount = ruleAmount(rule, hasValue ? tv : null);
		if (amount <= 0) continue;
		grants.push({
			userkey: rule.rewardusertype === "Referrer" ? referrer.userkey : friend.userkey,
			grant: {
				key: `${event.customid}:${rule.ruleid}`,
				ruleid: rule.ruleid,
				rewardfrequency: rule.rewardfrequency,
				usertype: rule.rewardusertype,
				amount: fromHundredths(amount),
				rewardunit: rule.rewardunit,
				rewardtype: campaign.distribution,
				campaignid: campaign.campaignid,
				campaignname: campaign.campaignname,
				growthhack: event.growthhack ?? campaign.growthhack,
				eventname: rule.eventname,
				customid: event.customid,
				friend: snapshot,
				...start,
			},
		});
	}
	return { ok: true, grants };
}
