import { describe, expect, it } from "vitest";
import type { Campaign, RewardRule } from "../../src/db/campaigns";
import type { User } from "../../src/db/users";
import {
	campaignClosed,
	initialStatus,
	matchingRules,
	rewardsForEvent,
	rewardTypeAllows,
	roundToHundredths,
	ruleAmount,
} from "../../src/rewards/rules";

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
	tiers: [],
	recurringmonths: 0,
	milestone: 0,
	...over,
});

const NOW = new Date("2026-11-21T22:00:00.000Z");

const campaign = (over: Partial<Campaign> = {}): Campaign => ({
	campaignid: 3,
	appid: "app_x",
	campaignname: "Spring",
	archivedAt: null,
	offertitle: "",
	offerdescription: "",
	campaignbgcolor: "#ffffff",
	campaignstartdate: NOW.toISOString(),
	campaignenddate: null,
	widgetfont: "",
	customdomain: "",
	rewardtype: 3,
	terms: "",
	distribution: "InstoreCredits",
	holddays: 0,
	autoapprove: true,
	growthhack: "SaaS_Referrals",
	currency: "EUR",
	suspicioussignals: null,
	velocitythreshold: 20,
	showleaderboard: false,
	leaderboardnames: "firstinitial",
	createdAt: NOW.toISOString(),
	updatedAt: NOW.toISOString(),
	...over,
});

const user = (userkey: string, over: Partial<User> = {}): User => ({
	userid: 1,
	appid: "app_x",
	userkey,
	referralcode: "ABCDEFGH",
	campaignid: 3,
	email: null,
	useraccountid: null,
	name: null,
	phone: null,
	profileimage: null,
	city: null,
	state: null,
	country: null,
	paymentcustomerid: null,
	usertimezone: null,
	extrainfo: null,
	isexistinguser: false,
	referrerUserid: null,
	status: "SignUp",
	friendsCount: 0,
	convertedFriendsCount: 0,
	createdAt: NOW.toISOString(),
	updatedAt: NOW.toISOString(),
	referrerCode: null,
	customdomain: "",
	erasedAt: null,
	...over,
});

const friend = user("ufriend0000000000000", { email: "fran@x.io", name: "Fran", referrerUserid: 2 });
const referrer = user("ureferrer00000000000", { userid: 2, email: "rita@y.io", name: "Rita" });
const signup = { customid: "42", eventname: "Signup", transactionvalue: null };

describe("roundToHundredths", () => {
	it.each([
		[1.005, 1.01],
		[2.675, 2.68],
		[10.075, 10.08],
		[1234.565, 1234.57],
		[0.004, 0],
		[12, 12],
	])("%s -> %s (half-up)", (value, rounded) => {
		expect(roundToHundredths(value)).toBe(rounded);
	});
});

describe("ruleAmount", () => {
	it("fixed: the reward as is, rounded half-up; the cap is for percent rules", () => {
		expect(ruleAmount(rule({ reward: 10 }), null)).toBe(10);
		expect(ruleAmount(rule({ reward: 2.675 }), null)).toBe(2.68);
		expect(ruleAmount(rule({ reward: 50, maxrewardamount: 20 }), null)).toBe(50);
	});

	it("percent: that percent of the transaction value, rounded half-up", () => {
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%" }), 250)).toBe(25);
		expect(ruleAmount(rule({ reward: 5, rewardunit: "%" }), 10.1)).toBe(0.51);
		expect(ruleAmount(rule({ reward: 2.5, rewardunit: "%" }), 19.99)).toBe(0.5);
		expect(ruleAmount(rule({ reward: 10, rewardunit: " % " }), 80)).toBe(8);
	});

	it("percent: exact on the decimal values, half-up, no float before rounding", () => {
		// 4.995 exactly; the float product 15 * 33.3 / 100 is 4.994999..., which rounded to 4.99.
		expect(ruleAmount(rule({ reward: 15, rewardunit: "%" }), 33.3)).toBe(5);
		expect(ruleAmount(rule({ reward: 12.5, rewardunit: "%" }), 10.01)).toBe(1.25);
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%" }), 0.05)).toBe(0.01);
		expect(ruleAmount(rule({ reward: 0.1, rewardunit: "%" }), 4.95)).toBe(0);
		expect(ruleAmount(rule({ reward: 33.333, rewardunit: "%" }), 1_000_000_000)).toBe(333_330_000);
		expect(ruleAmount(rule({ reward: 7, rewardunit: "%" }), 1e11)).toBe(7_000_000_000);
		expect(ruleAmount(rule({ reward: 15, rewardunit: "%", maxrewardamount: 4.99 }), 33.3)).toBe(4.99);
	});

	it("percent: capped by maxrewardamount when it is above 0", () => {
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 15 }), 250)).toBe(15);
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 15 }), 100)).toBe(10);
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%", maxrewardamount: 0 }), 10_000)).toBe(1000);
	});

	it("percent without a transaction value does not fire", () => {
		expect(ruleAmount(rule({ reward: 10, rewardunit: "%" }), null)).toBeNull();
	});

	it("mintranvalue: below it (or without a value) the rule does not fire; at it, it does", () => {
		expect(ruleAmount(rule({ mintranvalue: 50 }), 49.99)).toBeNull();
		expect(ruleAmount(rule({ mintranvalue: 50 }), null)).toBeNull();
		expect(ruleAmount(rule({ mintranvalue: 50 }), 50)).toBe(10);
		expect(ruleAmount(rule({ mintranvalue: 50, rewardunit: "%", reward: 10 }), 60)).toBe(6);
	});
});

describe("gates and matching", () => {
	it("rewardtype: 0 none, 1 referrer, 2 friend, 3 both", () => {
		const table = [0, 1, 2, 3].map((t) => [rewardTypeAllows(t, "Referrer"), rewardTypeAllows(t, "Friend")]);
		expect(table).toEqual([
			[false, false],
			[true, false],
			[false, true],
			[true, true],
		]);
	});

	it("event names match case-insensitively, ignoring surrounding spaces", () => {
		const rules = [rule({ ruleid: 1, eventname: "signup" }), rule({ ruleid: 2, eventname: " Transaction " })];
		expect(matchingRules(rules, "SIGNUP").map((r) => r.ruleid)).toEqual([1]);
		expect(matchingRules(rules, "transaction").map((r) => r.ruleid)).toEqual([2]);
		expect(matchingRules(rules, "Conversion")).toEqual([]);
	});
});

describe("initial status", () => {
	it("status from the campaign's review settings", () => {
		expect(initialStatus({ autoapprove: true, holddays: 0 }, null, NOW)).toEqual({ status: "Approved", holdUntil: null, comment: null });
		expect(initialStatus({ autoapprove: true, holddays: 14 }, null, NOW)).toMatchObject({
			status: "UnderReview",
			holdUntil: "2026-12-05T22:00:00.000Z",
		});
		expect(initialStatus({ autoapprove: false, holddays: 14 }, null, NOW)).toMatchObject({ status: "UnderReview", holdUntil: null });
		expect(initialStatus({ autoapprove: false, holddays: 0 }, null, NOW)).toMatchObject({ status: "UnderReview", holdUntil: null });
		expect(initialStatus({ autoapprove: true, holddays: 0 }, "shared phone", NOW)).toEqual({
			status: "Suspicious",
			holdUntil: null,
			comment: "shared phone",
		});
	});
});

describe("rewardsForEvent", () => {
	const both = [rule({ ruleid: 1 }), rule({ ruleid: 2, rewardusertype: "Friend", reward: 5 })];

	it("Referrer rules go to the referrer, Friend rules to the friend, keyed by customid and rule", () => {
		const owned = rewardsForEvent(campaign(), both, friend, referrer, signup, NOW);
		expect(owned.map((g) => [g.owner, g.grant.usertype, g.grant.amount, g.grant.key])).toEqual([
			["referrer", "Referrer", 10, "42:1"],
			["friend", "Friend", 5, "42:2"],
		]);
		expect(owned[0]!.grant).toMatchObject({
			friend: { userkey: friend.userkey, email: "fran@x.io", name: "Fran", profileimage: null },
			campaignid: 3,
			campaignname: "Spring",
			growthhack: "SaaS_Referrals",
			rewardtype: "InstoreCredits",
			rewardunit: "USD",
			customid: "42",
			status: "Approved",
			rewardfrequency: 0,
		});
	});

	it("rewardtype gates which rules fire", () => {
		const types = (rewardtype: number) =>
			rewardsForEvent(campaign({ rewardtype }), both, friend, referrer, signup, NOW).map((g) => g.grant.usertype);
		expect(types(0)).toEqual([]);
		expect(types(1)).toEqual(["Referrer"]);
		expect(types(2)).toEqual(["Friend"]);
		expect(types(3)).toEqual(["Referrer", "Friend"]);
	});

	it("no referrer, or an existing user: nobody is rewarded", () => {
		expect(rewardsForEvent(campaign(), both, friend, null, signup, NOW)).toEqual([]);
		expect(rewardsForEvent(campaign(), both, { ...friend, isexistinguser: true }, referrer, signup, NOW)).toEqual([]);
	});

	it("percent rules: amount from the transaction value, capped, in the campaign's currency", () => {
		const pct = [rule({ ruleid: 9, eventname: "Transaction", rewardunit: "%", reward: 10, maxrewardamount: 20 })];
		const tx = (transactionvalue: number | null) =>
			rewardsForEvent(campaign(), pct, friend, referrer, { customid: "7", eventname: "transaction", transactionvalue }, NOW);
		expect(tx(120)[0]!.grant).toMatchObject({ amount: 12, rewardunit: "EUR" });
		expect(tx(1000)[0]!.grant.amount).toBe(20);
		expect(tx(null)).toEqual([]);
	});

	it("rules below mintranvalue, other events and zero amounts give nothing", () => {
		const rules = [rule({ ruleid: 1, eventname: "Transaction", mintranvalue: 50 }), rule({ ruleid: 2, reward: 0 })];
		expect(
			rewardsForEvent(campaign(), rules, friend, referrer, { customid: "1", eventname: "Transaction", transactionvalue: 49 }, NOW),
		).toEqual([]);
		expect(rewardsForEvent(campaign(), rules, friend, referrer, signup, NOW)).toEqual([]);
		expect(
			rewardsForEvent(campaign(), rules, friend, referrer, { customid: "1", eventname: "Transaction", transactionvalue: 50 }, NOW),
		).toHaveLength(1);
	});

	it("hold, fraud and distribution come from the campaign and the users", () => {
		const held = rewardsForEvent(campaign({ holddays: 1 }), both, friend, referrer, signup, NOW)[0]!.grant;
		expect(held).toMatchObject({ status: "UnderReview", holdUntil: "2026-11-22T22:00:00.000Z" });
		const twin = { ...friend, phone: "555" };
		const flagged = rewardsForEvent(campaign(), both, twin, { ...referrer, phone: "555" }, signup, NOW);
		expect(flagged.every((g) => g.grant.status === "Suspicious" && g.grant.holdUntil === null)).toBe(true);
		expect(rewardsForEvent(campaign({ distribution: "Coupon" }), both, friend, referrer, signup, NOW)[0]!.grant.rewardtype).toBe("Coupon");
	});

	it("passes rewardfrequency through for the ledger to enforce", () => {
		expect(rewardsForEvent(campaign(), [rule({ rewardfrequency: 2 })], friend, referrer, signup, NOW)[0]!.grant.rewardfrequency).toBe(2);
	});
});

describe("campaignClosed", () => {
	it("gives nothing before the start and from the end on; runs in between and without an end", () => {
		const at = (iso: string) => new Date(iso);
		const dates = { campaignstartdate: "2026-12-01T00:00:00.000Z", campaignenddate: "2027-01-01T00:00:00.000Z" };
		expect(campaignClosed(dates, at("2026-11-30T23:59:59.999Z"))).toMatch(/^starts on/);
		expect(campaignClosed(dates, at("2026-12-01T00:00:00.000Z"))).toBeNull();
		expect(campaignClosed(dates, at("2026-12-31T23:59:59.999Z"))).toBeNull();
		expect(campaignClosed(dates, at("2027-01-01T00:00:00.000Z"))).toMatch(/^ended on/);
		expect(campaignClosed({ ...dates, campaignenddate: null }, at("2099-01-01T00:00:00.000Z"))).toBeNull();
	});
});
