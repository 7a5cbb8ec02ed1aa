import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { type FakeStripe, startFakeStripe } from "./fake-stripe";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 35, test mode, end to end against `wrangler dev` (docs/test-mode.md): test keys register and
// convert; live keys and live stats never see it; the test webhook says livemode false; a live Stripe
// connection never pays a test reward (two local servers play Stripe, one per connection, recording
// every call); DELETE .../testdata leaves live data as it was.

let service: Awaited<ReturnType<typeof startService>>;
let liveStripe: FakeStripe;
let testStripe: FakeStripe;
let appid = "";
let campaignid = 0;
let live = { apikey: "", privatekey: "" };
let test = { apikey: "", privatekey: "" };

beforeAll(async () => {
	[service, liveStripe, testStripe] = await Promise.all([startService({ name: "testmode" }), startFakeStripe(), startFakeStripe()]);
	const created = await admin("POST", "/apps", { name: "Test mode shop", webhookurl: `${liveStripe.url}/hooks` });
	expect(created.status).toBe(201);
	appid = created.body.appid;
	live = { apikey: created.body.apikey, privatekey: created.body.privatekey };
	test = { apikey: created.body.testapikey, privatekey: created.body.testprivatekey };
	expect(test.apikey).toMatch(/^ak_test_/);
	const campaign = await admin("POST", `/apps/${appid}/campaigns`, {
		campaignname: "$5 paid into Stripe",
		distribution: "Stripe",
		currency: "USD",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 5, rewardunit: "USD" }],
	});
	expect(campaign.status).toBe(201);
	campaignid = campaign.body.campaignid;
	// Only the live connection for now.
	const connected = await admin("PATCH", `/apps/${appid}`, {
		stripe: { secretkey: "sk_live_e2eLiveKey0001", webhooksecret: "whsec_e2eLiveSecret0001", apiurl: liveStripe.url },
	});
	expect(connected.status).toBe(200);
}, 120_000);

afterAll(async () => {
	await service?.stop();
	await liveStripe?.close();
	await testStripe?.close();
});

const client = serviceClient(() => service);
const admin = client.admin;
const as = (keys: typeof live) => (operation: string, body: Record<string, unknown>) => client.api(operation, { ...keys, ...body });
const context = () =>
	`${service.logs().slice(-3000)}\nlive Stripe: ${JSON.stringify(liveStripe.calls.slice(-3))}\ntest Stripe: ${JSON.stringify(testStripe.calls.slice(-3))}`;
const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, { timeoutMs: 45_000, context });

async function referral(api: ReturnType<typeof as>, name: string) {
	const referrer = (await api("register", { email: `${name}@example.com`, paymentcustomerid: `cus_${name}` })).body;
	const friend = (await api("register", { email: `${name}.friend@example.com`, referrercode: referrer.referralcode })).body;
	const converted = await api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Transaction",
		customid: `ord_${name}`,
		transactionvalue: 50,
		growthhack: "SaaS_Referrals",
	});
	expect(converted.body).toMatchObject({ success: true, duplicate: false });
	return { referrer, friend, rewardid: `${referrer.userkey}-1` };
}

describe("test mode", () => {
	it("keeps test data away from live keys, stats and Stripe, says livemode false, and erases it alone", async () => {
		const liveApi = as(live);
		const testApi = as(test);
		const l = await referral(liveApi, "lana");
		await until("the live reward paid by the live connection", async () =>
			liveStripe.created.find((t) => t.customer === "cus_lana") ? true : undefined,
		);
		const t = await referral(testApi, "tom");

		// Live keys cannot see the test user; test keys cannot see the live one.
		const hidden = await liveApi("getuserbalance", { userkey: t.referrer.userkey, campaignid });
		expect(hidden.status).toBe(404);
		expect(hidden.body.errorcode).toBe("user_not_found");
		expect((await testApi("getuserbalance", { userkey: l.referrer.userkey, campaignid })).status).toBe(404);
		expect((await testApi("getuserbalance", { userkey: t.referrer.userkey, campaignid })).status).toBe(200);

		// Live stats do not count it; ?mode=test does. The reward counters reach D1 with the ledgers' projection
		// (a queue, at most a few seconds behind: docs/scaling.md), so wait for lana's reward to be counted too.
		const liveStats = await until("live stats", async () => {
			const s = (await admin("GET", `/apps/${appid}/stats`)).body;
			return s.totals?.signups === 2 && s.totals?.rewardscreated === 1 ? s : undefined;
		});
		expect(liveStats.totals).toMatchObject({ signups: 2, referredsignups: 1 });
		const testStats = (await admin("GET", `/apps/${appid}/stats?mode=test`)).body;
		expect(testStats.totals).toMatchObject({ signups: 2, referredsignups: 1 });

		// The webhooks of the test keys say livemode false, those of the live keys true.
		const testHook = await until("a test conversion webhook", async () =>
			liveStripe.hooks.find((h) => h.type === "conversion.recorded" && h.data.customid === "ord_tom"),
		);
		expect(testHook.livemode).toBe(false);
		const liveHook = await until("a live conversion webhook", async () =>
			liveStripe.hooks.find((h) => h.type === "conversion.recorded" && h.data.customid === "ord_lana"),
		);
		expect(liveHook.livemode).toBe(true);

		// The test reward is not paid by the live connection: with no test connection its payout fails visibly.
		const unpaid = await until("the test payout refused", async () => {
			const s = (await testApi("checkrewardstatus", { rewarddtlid: t.rewardid })).body;
			return s.comment?.includes("not connected") ? s : undefined;
		});
		expect(unpaid.rewardstatus).toBe("Approved");
		expect(liveStripe.created.filter((c) => c.customer === "cus_tom")).toEqual([]);
		// Connected to a test key, the retry pays it there, and only there.
		const connected = await admin("PATCH", `/apps/${appid}`, {
			teststripe: { secretkey: "sk_test_e2eTestKey0002", webhooksecret: "whsec_e2eTestSecret0002", apiurl: testStripe.url },
		});
		expect(connected.status).toBe(200);
		expect((await admin("POST", `/apps/${appid}/users/${t.referrer.userkey}/payouts/retry?mode=test`)).status).toBe(202);
		const paid = await until("the test reward paid by the test connection", async () =>
			testStripe.created.find((c) => c.customer === "cus_tom"),
		);
		expect(paid).toMatchObject({ amount: -500, currency: "usd" });
		expect(testStripe.calls.every((c) => c.authorization === "Bearer sk_test_e2eTestKey0002")).toBe(true);
		expect(liveStripe.created.filter((c) => c.customer === "cus_tom")).toEqual([]);
		expect(liveStripe.created.filter((c) => c.customer === "cus_lana")).toHaveLength(1);

		// Erasing the test data leaves every live answer as it was.
		const liveBalance = (await liveApi("getuserbalance", { userkey: l.referrer.userkey, campaignid })).body;
		const liveRewards = (await admin("GET", `/apps/${appid}/rewards`)).body;
		const erased = await admin("DELETE", `/apps/${appid}/testdata`);
		expect(erased.body).toMatchObject({ done: true, deleted: { users: 2 } });
		expect((await testApi("getuserbalance", { userkey: t.referrer.userkey, campaignid })).status).toBe(404);
		expect((await admin("GET", `/apps/${appid}/users?mode=test`)).body.users).toEqual([]);
		expect((await liveApi("getuserbalance", { userkey: l.referrer.userkey, campaignid })).body).toEqual(liveBalance);
		expect((await admin("GET", `/apps/${appid}/rewards`)).body).toEqual(liveRewards);
		expect((await admin("GET", `/apps/${appid}/stats`)).body.totals).toEqual(liveStats.totals);
	});
});
