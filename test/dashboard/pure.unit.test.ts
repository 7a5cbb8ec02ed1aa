import { describe, expect, it } from "vitest";
import { activityOf } from "../../src/dashboard/activity";
import { axis, niceMax, points } from "../../src/dashboard/chart";
import { campaignFromForm, couponsFromText, csvCell, listText, splitCsvLine } from "../../src/dashboard/forms";
import { shownRate, statsCsv } from "../../src/dashboard/pages/analytics";
import { daysBetween, shapeStats } from "../../src/domain/stats";
import { FRAUD_SIGNALS } from "../../src/fraud/signals";

describe("campaignFromForm", () => {
	it("maps numbered rule and action groups, drops blank and removed ones, keeps rule ids", () => {
		const { body, errors } = campaignFromForm({
			campaignname: "C",
			holddays: "",
			autoapprove: "on",
			campaignstartdate: "2026-03-01T10:00",
			r0_ruleid: "7",
			r0_eventname: "Signup",
			r0_reward: "10",
			r0_rewardfrequency: "",
			r0_categories: "shoes, hats ,",
			r0_inclusionsandexclusions: "",
			r1_eventname: "Gone",
			r1_remove: "on",
			r2_eventname: "",
			s0_socialactionname: "Mail",
			s0_displayorder: "",
			s1_socialactionname: "",
		});
		expect(errors).toEqual([]);
		expect(body).toMatchObject({ campaignname: "C", holddays: "0", autoapprove: true, campaignstartdate: "2026-03-01T10:00:00Z" });
		expect(body.rewardrules).toEqual([
			expect.objectContaining({ ruleid: 7, eventname: "Signup", categories: ["shoes", "hats"], inclusionsandexclusions: [] }),
		]);
		expect(body.socialactions).toEqual([expect.objectContaining({ socialactionname: "Mail", displayorder: "0" })]);
		expect(campaignFromForm({ campaignname: "C" }).body.autoapprove).toBe(false);
	});

	it("leaves an empty frequency to the admin API's default", () => {
		const { body } = campaignFromForm({ r0_eventname: "Signup", r0_rewardfrequency: "" });
		expect(body.rewardrules).toEqual([expect.not.objectContaining({ rewardfrequency: expect.anything() })]);
	});

	it("keeps a structured list value it does not edit, and shows lists of words as text", () => {
		const kept = [{ sku: "A-1", exclude: true }];
		const { body, errors } = campaignFromForm({ r0_eventname: "x", r0_inclusionsandexclusions_kept: JSON.stringify(kept) });
		expect(errors).toEqual([]);
		expect(body.rewardrules).toEqual([expect.objectContaining({ inclusionsandexclusions: kept, categories: null })]);
		expect(listText(["a", "b"])).toBe("a, b");
		expect(listText(null)).toBe("");
		expect(listText(kept)).toBeNull();
		expect(listText(["a,b"])).toBeNull();
	});

	it("reads the fraud settings: ticked signals, all of them as the default, the velocity threshold", () => {
		const some = campaignFromForm({ fraudsettings: "1", suspicioussignals: ["same_ip", "velocity"], velocitythreshold: "5" }).body;
		expect(some).toMatchObject({ suspicioussignals: ["same_ip", "velocity"], velocitythreshold: "5" });
		expect(campaignFromForm({ fraudsettings: "1" }).body.suspicioussignals).toEqual([]);
		expect(campaignFromForm({ fraudsettings: "1", suspicioussignals: [...FRAUD_SIGNALS] }).body.suspicioussignals).toBeNull();
		expect(campaignFromForm({}).body).not.toHaveProperty("suspicioussignals");
	});
});

describe("coupons and CSV", () => {
	it("reads pasted lines and CSV first columns, skipping a header and duplicates", () => {
		expect(couponsFromText("A\n\n B \nA", 'code,name\nC,"Ten, off"\nB\n')).toEqual([
			{ coupon: "A" },
			{ coupon: "B" },
			{ coupon: "C", couponname: "Ten, off" },
		]);
		expect(splitCsvLine('a,"b ""q"", c",')).toEqual(["a", 'b "q", c', ""]);
	});

	it("quotes cells and defuses spreadsheet formulas", () => {
		expect(csvCell("a,b")).toBe('"a,b"');
		expect(csvCell("=SUM(A1)")).toBe("'=SUM(A1)");
		expect(csvCell(-3)).toBe("-3");
		expect(csvCell(null)).toBe("");
	});
});

describe("stats shaping", () => {
	it("fills every day, sums units and computes the referred share", () => {
		expect(daysBetween("2026-02-27", "2026-03-01")).toEqual(["2026-02-27", "2026-02-28", "2026-03-01"]);
		const stats = shapeStats(
			[
				{ day: "2026-02-28", metric: "signups", unit: "", value: 4 },
				{ day: "2026-02-28", metric: "referred_signups", unit: "", value: 1 },
				{ day: "2026-03-01", metric: "reward_amount", unit: "USD", value: 0.1 },
				{ day: "2026-03-01", metric: "reward_amount", unit: "USD", value: 0.2 },
				{ day: "2026-03-05", metric: "signups", unit: "", value: 99 },
			],
			"2026-02-27",
			"2026-03-01",
		);
		expect(stats.days.map((d) => d.signups)).toEqual([0, 4, 0]);
		expect(stats.totals).toMatchObject({ signups: 4, referredsignups: 1, rewardamount: { USD: 0.3 } });
		expect(stats.referredshare).toBe(0.25);
		expect(shapeStats([], "2026-01-01", "2026-01-01").referredshare).toBeNull();
		const cells = [
			{ day: "2026-03-01", metric: "reward_amount", unit: "EUR", value: 2 },
			{ day: "2026-03-01", metric: "reward_amount", unit: "USD", value: 0.3 },
			{ day: "2026-02-28", metric: "redeemed", unit: "USD", value: 1 },
		];
		const csv = statsCsv(shapeStats(cells, "2026-02-27", "2026-03-01")).split("\r\n");
		expect(csv[0]).toBe(
			"day,clicks,signups,referred_signups,conversions,rewards_created,reward_amount_EUR,reward_amount_USD,redeemed_EUR,redeemed_USD",
		);
		expect(csv[2]).toBe("2026-02-28,0,0,0,0,0,0,0,0,1");
		expect(csv[3]).toBe("2026-03-01,0,0,0,0,0,2,0.3,0,0");
	});
});

describe("chart", () => {
	it("scales to a round maximum", () => {
		expect([0, 1, 3, 7, 12, 180].map(niceMax)).toEqual([1, 1, 5, 10, 20, 200]);
		expect(points([0, 10], 10)).toBe("44.0,232.0 788.0,12.0");
	});
});

describe("analytics at a glance", () => {
	const day = (d: string, counts: Partial<Record<"clicks" | "signups" | "conversions", number>> = {}, redeemed = {}) => ({
		day: d,
		clicks: 0,
		signups: 0,
		referredsignups: 0,
		conversions: 0,
		rewardscreated: 0,
		rewardamount: {},
		redeemed,
		...counts,
	});

	it("shows a funnel rate only where its base holds what came out of it (issue 48)", () => {
		expect(shownRate(1, 4)).toBe("25%");
		expect(shownRate(2, 2)).toBe("100%");
		expect(shownRate(1, 3)).toBe("33.3%");
		expect(shownRate(0, 0)).toBe("—");
		expect(shownRate(2, 0)).toBe("—");
		expect(shownRate(2, 1)).toBe("—");
	});

	it("keeps the active days and folds quiet runs", () => {
		const days = ["01", "02", "03", "04", "05", "06"].map((d) => day(`2026-01-${d}`));
		days[2] = day("2026-01-03", { clicks: 2 });
		days[3] = day("2026-01-04", {}, { USD: 1.5 });
		const activity = activityOf(days, new Map([["2026-01-06", 4]]));
		expect(activity.active.map((d) => d.day)).toEqual(["2026-01-03", "2026-01-04", "2026-01-06"]);
		expect(activity.quiet).toEqual([
			{ from: "2026-01-01", to: "2026-01-02", days: 2 },
			{ from: "2026-01-05", to: "2026-01-05", days: 1 },
		]);
		expect(activity.quietDays).toBe(3);
	});

	it("puts whole-number ticks on the chart's axis", () => {
		expect(axis(0)).toEqual({ top: 1, ticks: [0, 1] });
		expect(axis(1)).toEqual({ top: 1, ticks: [0, 1] });
		expect(axis(3)).toEqual({ top: 3, ticks: [0, 1, 2, 3] });
		expect(axis(7)).toEqual({ top: 8, ticks: [0, 2, 4, 6, 8] });
		expect(axis(30)).toEqual({ top: 30, ticks: [0, 10, 20, 30] });
	});
});
