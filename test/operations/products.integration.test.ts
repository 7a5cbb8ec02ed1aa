import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";

type Api = Awaited<ReturnType<typeof createApp>>["api"];

/** Referrer rules of distinct amounts, so each reward names the rule that paid it. */
const RULES = [
	// 1: shoes and hats, but never the excluded SKU (whose category is shoes).
	{
		rewardusertype: "Referrer",
		eventname: "Purchase",
		reward: 1,
		rewardunit: "USD",
		categories: ["Shoes", "hats"],
		inclusionsandexclusions: [{ type: "exclude", productid: "SKU-BANNED" }],
	},
	// 2: one product, whatever its category.
	{
		rewardusertype: "Referrer",
		eventname: "Purchase",
		reward: 2,
		rewardunit: "USD",
		inclusionsandexclusions: [{ type: "Include", productid: "sku-gift" }],
	},
	// 4: every product (restricts nothing), as every rule did before.
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 4, rewardunit: "USD" },
	// 8: anything but one product.
	{
		rewardusertype: "Referrer",
		eventname: "Purchase",
		reward: 8,
		rewardunit: "USD",
		inclusionsandexclusions: [{ type: "exclude", productid: "SKU-GIFT" }],
	},
];

async function shop() {
	const app = await createApp({ rewardrules: RULES });
	const referrer = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", referrercode: referrer.referralcode })).body;
	return { ...app, referrer, friend };
}

let nextCustomId = 5000;
const purchase = (api: Api, userkey: string, extra: Record<string, unknown>) =>
	api("registerconversionevent", {
		userkey,
		eventname: "Purchase",
		customid: String(nextCustomId++),
		growthhack: "SaaS_Referrals",
		...extra,
	});

/** The sum of the amounts the referrer earned from one event: a bit per rule that fired. */
async function firedBy(api: Api, appid: string, referrerkey: string, friendkey: string, extra: Record<string, unknown>) {
	const before = (await ledgerFor(env, appid, referrerkey).listRewards()).length;
	const res = await purchase(api, friendkey, extra);
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	const rewards = (await ledgerFor(env, appid, referrerkey).listRewards()).slice(before);
	return rewards.reduce((sum, r) => sum + Number(r.reward), 0);
}

describe("products and categories", () => {
	it("fires rules by the event's category and product, ignoring case, an exclusion beating its included category", async () => {
		const { api, appid, referrer, friend } = await shop();
		const fired = (extra: Record<string, unknown>) => firedBy(api, appid, referrer.userkey, friend.userkey, extra);
		// No product: only the rule that restricts nothing.
		expect(await fired({})).toBe(4);
		// A listed category (another case), another product: 1 + 4 + 8.
		expect(await fired({ category: "SHOES", productid: "SKU-RUNNER" })).toBe(13);
		// The excluded product in an included category: rule 1 does not fire.
		expect(await fired({ category: "shoes", productid: "sku-banned" })).toBe(12);
		// The included product in an unlisted category (URL-encoded text, like every text field): 2 + 4, not 8.
		expect(await fired({ category: "Gift%20cards", productid: "Sku-Gift" })).toBe(6);
		// A category alone, not listed: the unrestricted rule and the exclusions-only rule.
		expect(await fired({ category: "books" })).toBe(12);
		// D1's row of the event follows the projection of its announcement, which carries what was bought (issue 49).
		const stored = await until(
			"the event in D1",
			() =>
				env.DB.prepare("SELECT productid, category FROM conversion_events WHERE appid = ? AND category = 'Gift cards'").bind(appid).first(),
			(row) => row !== null,
		);
		expect(stored).toEqual({ productid: "Sku-Gift", category: "Gift cards" });
	});

	it("does not ask for a transactionvalue when the only percent rule is for another product", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "%", categories: ["premium"] },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 3, rewardunit: "USD" },
			],
		});
		const referrer = (await app.api("register", { email: "r2@x.com" })).body;
		const friend = (await app.api("register", { email: "f2@x.com", referrercode: referrer.referralcode })).body;
		expect(await firedBy(app.api, app.appid, referrer.userkey, friend.userkey, { category: "basic" })).toBe(3);
		const refused = await purchase(app.api, friend.userkey, { category: "Premium" });
		expect(refused.status).toBe(400);
		expect(refused.body).toMatchObject({ errorcode: "validation_failed", fields: ["transactionvalue"] });
		expect(await firedBy(app.api, app.appid, referrer.userkey, friend.userkey, { category: "Premium", transactionvalue: "50" })).toBe(8);
	});

	it("refuses a product id or category over 100 characters, recording nothing", async () => {
		const { api, appid, friend } = await shop();
		for (const field of ["productid", "category"]) {
			const res = await purchase(api, friend.userkey, { [field]: "x".repeat(101) });
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: [field] });
		}
		expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(appid).first()).toEqual({ n: 0 });
	});

	it("shows both fields in getcampaigndata as stored, and refuses malformed ones on save", async () => {
		const { api, appid, campaignid } = await shop();
		const { body } = await api("getcampaigndata", { campaignid: String(campaignid) });
		expect(body.rewardrules.map((r: Record<string, unknown>) => [r.categories, r.inclusionsandexclusions])).toEqual([
			[["Shoes", "hats"], [{ type: "exclude", productid: "SKU-BANNED" }]],
			[null, [{ type: "include", productid: "sku-gift" }]],
			[null, []],
			[null, [{ type: "exclude", productid: "SKU-GIFT" }]],
		]);
		const bad = await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, {
			rewardrules: [
				{
					rewardusertype: "Referrer",
					eventname: "Purchase",
					reward: 1,
					rewardunit: "USD",
					inclusionsandexclusions: [{ type: "only", productid: "A" }],
				},
			],
		});
		expect(bad.status).toBe(400);
		expect(JSON.stringify(bad.body)).toMatch(/include or exclude/);
		const badCategory = await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, {
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 1, rewardunit: "USD", categories: [{ name: "x" }] }],
		});
		expect(badCategory.status).toBe(400);
		// Nothing changed.
		expect((await api("getcampaigndata", { campaignid: String(campaignid) })).body.rewardrules).toHaveLength(4);
	});

	it("ignores values of another shape stored before the fields had a meaning: such a rule fires as before", async () => {
		const { api, appid, referrer, friend } = await shop();
		// What the admin API accepted before (any JSON), written as it would have been stored.
		await env.DB.prepare(
			`UPDATE reward_rules SET categories = '"whatever"', inclusionsandexclusions = '[{"sku":"A-1","exclude":true}]'
			 WHERE reward = 4 AND campaignid IN (SELECT campaignid FROM campaigns WHERE appid = ?)`,
		)
			.bind(appid)
			.run();
		expect(await firedBy(api, appid, referrer.userkey, friend.userkey, {})).toBe(4);
	});
});
