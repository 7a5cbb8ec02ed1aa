import { describe, expect, it } from "vitest";
import { apiFieldName, checkCampaign } from "../../src/dashboard/campaign-check";
import { blankRule, newCampaign, typedFromForm, typedFromStored } from "../../src/dashboard/campaign-typed";
import { campaignFromForm } from "../../src/dashboard/forms";
import { ordinal, ruleSentence } from "../../src/dashboard/rule-words";

/** The campaign builder's pure parts (issue 48): the rule in words, the checks, the form as typed. */

const NOW = new Date("2026-11-29T12:00:00Z");

describe("ruleSentence", () => {
	it("reads a rule as a marketer says it", () => {
		const rule = { ...blankRule(), eventname: "Transaction", reward: "10", rewardunit: "USD" };
		expect(ruleSentence({ ...rule, tiers: [{ fromcount: "3", reward: "20" }] })).toBe(
			"The referrer gets 10 USD when a friend pays, from the 3rd friend 20 USD.",
		);
		expect(ruleSentence({ ...rule, rewardusertype: "Friend", eventname: "Signup", reward: "5" })).toBe(
			"The friend gets 5 USD when they sign up, once per friend.",
		);
		expect(ruleSentence({ ...rule, rewardunit: "%", maxrewardamount: "50", eventname: "Renewal", rewardfrequency: "3" })).toBe(
			"The referrer gets 10% of what the friend pays, at most 50 when a friend has the event “Renewal”, up to 3 times per friend.",
		);
		expect(ruleSentence({ ...rule, milestone: "5", reward: "100" })).toBe("The referrer gets 100 USD once, when the 5th friend pays.");
		expect(ruleSentence({ ...rule, eventname: "" })).toBeNull();
		expect(["1", "2", "3", "4", "11", "12", "13", "21", "102"].map((n) => ordinal(Number(n)))).toEqual([
			"1st",
			"2nd",
			"3rd",
			"4th",
			"11th",
			"12th",
			"13th",
			"21st",
			"102nd",
		]);
	});
});

describe("checkCampaign", () => {
	const form = {
		campaignname: "",
		campaignstartdate: "2030-03-10T09:00",
		campaignenddate: "2030-03-01T09:00",
		rewardtype: "3",
		holddays: "-3",
		distribution: "InstoreCredits",
		growthhack: "SaaS_Referrals",
		currency: "USD",
		campaignbgcolor: "#ffffff",
		r0_rewardusertype: "Referrer",
		r0_eventname: "Transaction",
		r0_reward: "10",
		r0_rewardunit: "USD",
		r0_t0_fromcount: "1",
		r0_t0_reward: "20",
		r0_t1_fromcount: "5",
		r0_t1_reward: "50",
		s0_network: "mail",
		s0_sharemessage: "Join SHARE_URL",
	};

	it("tells every mistake at once, on its field, in words that state the rule", () => {
		const { problems, warnings } = checkCampaign(typedFromForm(form), { now: NOW });
		expect(problems.map((p) => p.field)).toEqual(["campaignname", "campaignenddate", "holddays", "r0_t0_fromcount"]);
		expect(problems.find((p) => p.field === "holddays")?.message).toBe("Hold days: 0 to 365 days (0: no hold).");
		expect(problems.map((p) => p.message).join(" ")).not.toMatch(/integer|must be a number/);
		expect(warnings).toEqual([]);
	});

	it("wants tiers that climb, on referrer rules only, and a milestone without tiers", () => {
		const typed = typedFromForm({ ...form, campaignname: "C", campaignenddate: "", holddays: "0", r0_t0_fromcount: "6" });
		expect(checkCampaign(typed, { now: NOW }).problems).toEqual([
			{ field: "r0_t1_fromcount", message: "Each tier starts after the one above it: a friend number above 6." },
		]);
		const friend = typedFromForm({ ...form, campaignname: "C", campaignenddate: "", holddays: "0", r0_rewardusertype: "Friend" });
		expect(checkCampaign(friend, { now: NOW }).problems.map((p) => p.field)).toEqual(["r0_t0_fromcount", "r0_t1_fromcount"]);
		const milestone = typedFromForm({
			...form,
			campaignname: "C",
			campaignenddate: "",
			holddays: "0",
			r0_t0_fromcount: "2",
			r0_milestone: "4",
		});
		expect(checkCampaign(milestone, { now: NOW }).problems.map((p) => p.message)).toEqual([
			"A milestone pays once: clear the tiers, or set it to 0.",
		]);
	});

	it("says an end in the past and a campaign without a share button before saving, until confirmed", () => {
		const quiet = { ...form, campaignname: "C", holddays: "0", r0_t0_fromcount: "2", campaignstartdate: "", s0_network: "" };
		const past = { ...quiet, campaignenddate: "2026-11-01T00:00" };
		expect(checkCampaign(typedFromForm(past), { now: NOW, storedStart: "2026-10-01T00:00:00.000Z" }).warnings.map((w) => w.id)).toEqual([
			"pastend",
			"noshare",
		]);
		// A new campaign (no saved start) with a past end never runs: that is a mistake, not a warning.
		expect(checkCampaign(typedFromForm(past), { now: NOW }).problems.map((p) => p.field)).toEqual(["campaignenddate"]);
		// An end already saved is not said again; confirmed warnings are not said again.
		expect(
			checkCampaign(typedFromForm({ ...past, confirm: "noshare" }), {
				now: NOW,
				storedStart: "2026-10-01T00:00:00.000Z",
				storedEnd: "2026-11-01T00:00:00.000Z",
			}).warnings,
		).toEqual([]);
	});
});

describe("the form as typed", () => {
	it("keeps every row where it was typed, tiers included, and sends tiers and networks as the admin API takes them", () => {
		const form = {
			campaignname: "C",
			r0_eventname: "Transaction",
			r0_reward: "10",
			r0_t0_fromcount: "",
			r0_t0_reward: "",
			r0_t1_fromcount: "3",
			r0_t1_reward: "20",
			r1_eventname: "",
			r1_reward: "",
			s0_network: "",
			s1_network: "link",
			s1_sharemessage: "Try it",
		};
		const typed = typedFromForm(form);
		expect(typed.rules).toHaveLength(2);
		expect(typed.rules[0]?.tiers).toEqual([
			{ fromcount: "", reward: "" },
			{ fromcount: "3", reward: "20" },
		]);
		const { body, rows } = campaignFromForm(form);
		expect(body.rewardrules).toEqual([expect.objectContaining({ eventname: "Transaction", tiers: [{ fromcount: "3", reward: "20" }] })]);
		expect(body.socialactions).toEqual([
			expect.objectContaining({ socialactionid: "14", socialactionname: "CustomLink", sharemessagetype: "14", sharemessage: "Try it" }),
		]);
		expect(rows).toEqual({ rules: [0], actions: [1], tiers: [[1]] });
		expect(apiFieldName("rewardrules.0.tiers.0.reward", rows)).toBe("r0_t1_reward");
		expect(apiFieldName("socialactions.0.socialactionid", rows)).toBe("s1_network");
		expect(apiFieldName("holddays", rows)).toBe("holddays");
	});

	it("shows a stored share button of an unknown id as it is, and a new campaign with two to start from", () => {
		const stored = typedFromStored({ socialactions: [{ socialactionid: "99", socialactionname: "Line", sharemessage: "Hi" }] });
		expect(stored.shares[0]).toMatchObject({ network: "keep", socialactionid: "99", socialactionname: "Line" });
		expect(newCampaign().shares.map((s) => s.network)).toEqual(["mail", "link", ""]);
	});
});
