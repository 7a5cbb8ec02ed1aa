import { describe, expect, it } from "vitest";
import type { RewardRule } from "../../src/db/campaigns";
import { initialStatus, type RulesInput, rewardsForEvent, ruleAmount } from "../../src/ledger/rules";

const rule = (over: Partial<RewardRule> = {}): RewardRule => ({
	ruleid: 11,
	campaignid: 3,
	rewardusertype: "Referrer",
	eventname: "Signup",
	reward: 10,
	rewardunit: "USD",
	rewardfrequency: 0,
	mintranvalue: 0,
	maxrewardamount: 0,
	categories: null,
	inclusionsandexclusions: [],
	...over,
});

const NOW = new Date("2026-11-21T22:00:00.000Z");
const friend = { userkey: "ufriend0000000000000", email: "f@x.io", name: "Fran", profileimage: null, isexistinguser: false };
const referrer = { userkey: "ureferrer00000000000", email: "r@x.io", name: "Rita", profileimage: null };

function input(rules: RewardRule[], over: Partial<RulesInput> = {}, event: Partial<RulesInput["event"]> = {}): RulesInput {
	return {
		campaign: {
			campaignid: 3,
			campaignname: "Spring",
			rewardtype: 3,
			distribution: "InstoreCredits",
			holddays: 0,
			autoapprove: true,
			growthhack: "SaaS_Referrals",
			rewardrules: rules,
		},
		friend,
		referrer,
		event: { customid: "42", eventname: "Signup", ...event },
		now: NOW,
		...over,
	};
}

const grantsOf = (i: RulesInput) => {
	const r = rewardsForEvent(i);
	if (!r.ok) throw new Error(r.error.message);
	return r.grants;
};

describe("ruleAmount", () => {
	it("fixed: the reward as is, rounded half-up, cap not applied", () => {
		expect(ruleAmount(rule({ reward: 10 }), null)).toBe(1000);
		expect(ruleAmount(rule({ reward: 2.675 }), null)).toBe(268);
		expect(ruleAmount(rule({ reward: 50, maxrewardamount: 20 }), 999)).toBe(5000);
	});
	it("percent: that percent of the transaction value, rounded half-up", () => {
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%" }), 250)).toBe(2500);
		expect(ruleAmount(rule({ reward: 5, rewardunit: "%" }), 10.1)).toBe(51); // 0.505 -> 0.51
		expect(ruleAmount(rule({ reward: 2.5, rewardunit: "%" }), 19.99)).toBe(50); // 0.49975 -> 0.50
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%" }), null)).toBe(0);
	});
	it("percent: capped by maxrewardamount when above 0", () => {
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 15 }), 250)).toBe(1500);
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 15 }), 100)).toBe(1000);
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 0 }), 10_000)).toBe(100_000);
	});
});

describe("initialStatus", () => {
	it("auto-approve without hold: Approved", () => {
		expect(initialStatus({ autoapprove: true, holddays: 0 }, NOW, null)).toEqual({ status: "Approved", holdUntil: null, comment: null });
	});
	it("hold days: UnderReview until the hold ends", () => {
		expect(initialStatus({ autoapprove: true, holddays: 14 }, NOW, null)).toEqual({
			status: "UnderReview",
			holdUntil: "2026-12-05T22:00:00.000Z",
			comment: null,
		});
	});
	it("no auto-approve: UnderReview with no automatic end", () => {
		expect(initialStatus({ autoapprove: false, holddays: 14 }, NOW, null)).toEqual({
			status: "UnderReview",
			holdUntil: null,
			comment: null,
		});
	});
	it("flagged by a fraud check: Suspicious, never approved by itself", () => {
		expect(initialStatus({ autoapprove: true, holddays: 0 }, NOW, "same device")).toEqual({
			status: "Suspicious",
			holdUntil: null,
			comment: "same device",
		});
	});
});

describe("rewardsForEvent", () => {
	it("Friend rules reward the friend, Referrer rules the referrer, with the friend's snapshot and a key per rule", () => {
		const grants = grantsOf(input([rule({ ruleid: 1 }), rule({ ruleid: 2, rewardusertype: "Friend", reward: 5 })]));
		expect(grants.map((g) => [g.userkey, g.grant.usertype, g.grant.amount, g.grant.key])).toEqual([
			[referrer.userkey, "Referrer", 10, "42:1"],
			[friend.userkey, "Friend", 5, "42:2"],
		]);
		expect(grants[0]!.grant).toMatchObject({
			friend: { userkey: friend.userkey, email: "f@x.io", name: "Fran", profileimage: null },
			campaignid: 3,
			campaignname: "Spring",
			growthhack: "SaaS_Referrals",
			rewardtype: "InstoreCredits",
			eventname: "Signup",
			customid: "42",
			status: "Approved",
			rewardfrequency: 0,
		});
	});

	it("matches event names case-insensitively and ignores other events", () => {
		const rules = [rule({ ruleid: 1, eventname: "signup" }), rule({ ruleid: 2, eventname: "Transaction" })];
		expect(grantsOf(input(rules, {}, { eventname: "SIGNUP" })).map((g) => g.grant.ruleid)).toEqual([1]);
		expect(grantsOf(input(rules, {}, { eventname: "Conversion" }))).toEqual([]);
	});

	it("rewardtype gates: 0 none, 1 referrer, 2 friend, 3 both", () => {
		const rules = [rule({ ruleid: 1 }), rule({ ruleid: 2, rewardusertype: "Friend" })];
		const types = (rewardtype: number) =>
			grantsOf(input(rules, { campaign: { ...input(rules).campaign, rewardtype } })).map((g) => g.grant.usertype);
		expect(types(0)).toEqual([]);
		expect(types(1)).toEqual(["Referrer"]);
		expect(types(2)).toEqual(["Friend"]);
		expect(types(3)).toEqual(["Referrer", "Friend"]);
	});

	it("no referrer: nobody is rewarded (Friend rules need one too)", () => {
		expect(grantsOf(input([rule(), rule({ rewardusertype: "Friend" })], { referrer: null }))).toEqual([]);
	});

	it("an existing user earns nothing for anyone", () => {
		expect(grantsOf(input([rule(), rule({ rewardusertype: "Friend" })], { friend: { ...friend, isexistinguser: true } }))).toEqual([]);
	});

	it("mintranvalue: below it the rule does not fire, at it it does", () => {
		const rules = [rule({ eventname: "Transaction", mintranvalue: 50 })];
		expect(grantsOf(input(rules, {}, { eventname: "Transaction", transactionvalue: 49.99 }))).toEqual([]);
		expect(grantsOf(input(rules, {}, { eventname: "Transaction", transactionvalue: 50 }))).toHaveLength(1);
	});

	it("percent rules and mintranvalue rules need the transaction value", () => {
		const pct = [rule({ ruleid: 9, eventname: "Transaction", rewardunit: "%", reward: 10, maxrewardamount: 20 })];
		expect(rewardsForEvent(input(pct, {}, { eventname: "Transaction" }))).toMatchObject({
			ok: false,
			error: { code: "transactionvalue_required", ruleid: 9 },
		});
		expect(grantsOf(input(pct, {}, { eventname: "Transaction", transactionvalue: 120 }))[0]!.grant).toMatchObject({
			amount: 12,
			rewardunit: "%",
		});
		expect(grantsOf(input(pct, {}, { eventname: "Transaction", transactionvalue: 1000 }))[0]!.grant.amount).toBe(20);
		const min = [rule({ eventname: "Transaction", mintranvalue: 1 })];
		expect(rewardsForEvent(input(min, {}, { eventname: "Transaction" })).ok).toBe(false);
		// A rule that would not fire anyway does not require it.
		expect(rewardsForEvent(input(pct, { campaign: { ...input(pct).campaign, rewardtype: 2 } }, { eventname: "Transaction" }))).toEqual({
			ok: true,
			grants: [],
		});
	});

	it("a rule that computes to 0 gives nothing", () => {
		expect(grantsOf(input([rule({ reward: 0 })]))).toEqual([]);
		expect(grantsOf(input([rule({ rewardunit: "%", eventname: "Signup" })], {}, { transactionvalue: 0 }))).toEqual([]);
	});

	it("status, hold and fraud flag come from the campaign and the check; growth hack from the event", () => {
		const held = grantsOf(input([rule()], { campaign: { ...input([rule()]).campaign, holddays: 1 } }, { growthhack: "Other" }))[0]!.grant;
		expect(held).toMatchObject({ status: "UnderReview", holdUntil: "2026-11-22T22:00:00.000Z", growthhack: "Other" });
		expect(grantsOf(input([rule()], { flagged: "velocity" }))[0]!.grant).toMatchObject({
			status: "Suspicious",
			comment: "velocity",
			holdUntil: null,
		});
		expect(grantsOf(input([rule()], { campaign: { ...input([rule()]).campaign, distribution: "Coupon" } }))[0]!.grant.rewardtype).toBe(
			"Coupon",
		);
	});

	it("passes rewardfrequency through for the ledger to enforce", () => {
		expect(grantsOf(input([rule({ rewardfrequency: 2 })]))[0]!.grant.rewardfrequency).toBe(2);
	});
});
