import { describe, expect, it } from "vitest";
import { bucketDelta, contribution, nestBalances } from "../../src/ledger/balance";

describe("contribution", () => {
	it("follows decisions.md §4 for every status", () => {
		expect(contribution("Rejected", 1000, 0)).toEqual({ pending: 0, approved: 0, claimed: 0 });
		expect(contribution("UnderReview", 1000, 300)).toEqual({ pending: 700, approved: 0, claimed: 300 });
		expect(contribution("Suspicious", 1000, 0)).toEqual({ pending: 1000, approved: 0, claimed: 0 });
		expect(contribution("Approved", 1000, 300)).toEqual({ pending: 0, approved: 700, claimed: 300 });
		expect(contribution("Rewarded", 1000, 1000)).toEqual({ pending: 0, approved: 0, claimed: 1000 });
	});

	it("delta of a status change moves the amount between buckets", () => {
		expect(bucketDelta(contribution("UnderReview", 500, 0), contribution("Approved", 500, 0))).toEqual({
			pending: -500,
			approved: 500,
			claimed: 0,
		});
	});
});

describe("nestBalances", () => {
	it("nests unit -> growth hack -> campaign with exact totals at every level", () => {
		const rows = [
			{ rewardunit: "USD", growthhack: "SaaS_Referrals", campaignid: 1, campaignname: "A", pending: 10, approved: 20, claimed: 1, owed: 0 },
			{ rewardunit: "USD", growthhack: "SaaS_Referrals", campaignid: 2, campaignname: "B", pending: 0, approved: 1, claimed: 0, owed: 0 },
			{ rewardunit: "USD", growthhack: "Other", campaignid: 3, campaignname: "C", pending: 5, approved: 0, claimed: 0, owed: 7 },
			{
				rewardunit: "points",
				growthhack: "SaaS_Referrals",
				campaignid: 1,
				campaignname: "A",
				pending: 0,
				approved: 0,
				claimed: 100,
				owed: 0,
			},
		];
		const nested = nestBalances(rows);
		expect(nested).toEqual([
			{
				rewardunit: "USD",
				total: 0.37,
				pending: 0.15,
				approved: 0.21,
				claimed: 0.01,
				owed: 0.07,
				growthhacks: [
					{
						growthhack: "SaaS_Referrals",
						rewardunit: "USD",
						total: 0.32,
						pending: 0.1,
						approved: 0.21,
						claimed: 0.01,
						owed: 0,
						campaigns: [
							{
								campaignid: 1,
								campaignname: "A",
								growthhack: "SaaS_Referrals",
								rewardunit: "USD",
								total: 0.31,
								pending: 0.1,
								approved: 0.2,
								claimed: 0.01,
								owed: 0,
							},
							{
								campaignid: 2,
								campaignname: "B",
								growthhack: "SaaS_Referrals",
								rewardunit: "USD",
								total: 0.01,
								pending: 0,
								approved: 0.01,
								claimed: 0,
								owed: 0,
							},
						],
					},
					{
						growthhack: "Other",
						rewardunit: "USD",
						total: 0.05,
						pending: 0.05,
						approved: 0,
						claimed: 0,
						owed: 0.07,
						campaigns: [
							{
								campaignid: 3,
								campaignname: "C",
								growthhack: "Other",
								rewardunit: "USD",
								total: 0.05,
								pending: 0.05,
								approved: 0,
								claimed: 0,
								owed: 0.07,
							},
						],
					},
				],
			},
			{
				rewardunit: "points",
				total: 1,
				pending: 0,
				approved: 0,
				claimed: 1,
				owed: 0,
				growthhacks: [
					{
						growthhack: "SaaS_Referrals",
						rewardunit: "points",
						total: 1,
						pending: 0,
						approved: 0,
						claimed: 1,
						owed: 0,
						campaigns: [
							{
								campaignid: 1,
								campaignname: "A",
								growthhack: "SaaS_Referrals",
								rewardunit: "points",
								total: 1,
								pending: 0,
								approved: 0,
								claimed: 1,
								owed: 0,
							},
						],
					},
				],
			},
		]);
	});

	it("is empty for no rows", () => {
		expect(nestBalances([])).toEqual([]);
	});
});
