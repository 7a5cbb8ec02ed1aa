import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, withWebhook } from "../support/api";

/** An app with the given rules, a referrer and a referred friend. */
async function referral(rewardrules: Record<string, unknown>[]) {
	// With a webhook URL: an app without one records no webhook events (conversion.recorded is checked below).
	const app = await createApp({ rewardrules }, withWebhook());
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", referrercode: referrer.referralcode })).body;
	const event = (eventname: string, customid: string, transactionvalue?: string) =>
		app.api("registerconversionevent", { userkey: friend.userkey, eventname, customid, growthhack: "SaaS_Referrals", transactionvalue });
	const rewardsOf = (userkey: string) => ledgerFor(env, app.appid, userkey).listRewards();
	const rules = async () =>
		(await admin("GET", `/apps/${app.appid}/campaigns/${app.campaignid}`)).body.rewardrules as Record<string, any>[];
	const patch = (body: Record<string, unknown>) => admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, body);
	return { ...app, referrer, friend, event, rewardsOf, rules, patch };
}

const signupRules = [
	{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
	{ rewardusertype: "Friend", eventname: "Signup", reward: 5, rewardunit: "USD" },
];
/** The rule fields an admin sends back, without the bookkeeping the API adds. */
const asInput = ({ ruleid, rewardusertype, eventname, reward, rewardunit, rewardfrequency }: Record<string, any>) => ({
	ruleid,
	rewardusertype,
	eventname,
	reward,
	rewardunit,
	rewardfrequency,
});

describe("frozen event decisions and rule identity", () => {
	it("a replay after a PATCH (with or without ruleids) creates nothing", async () => {
		const r = await referral(signupRules);
		expect((await r.event("Signup", "1")).body.message).toMatch(/2 reward\(s\) created/);
		const rules = await r.rules();
		expect(rules.map((rule) => rule.ruleid)).toEqual([expect.any(Number), expect.any(Number)]);
		// Same rules, same ids: an edit that changes nothing.
		expect((await r.patch({ rewardrules: rules.map(asInput) })).status).toBe(200);
		expect((await r.event("Signup", "1")).body.message).toMatch(/no new event or reward/);
		// The rules sent again without ids: new rules (the old ones retire); the recorded event's decision stands.
		expect((await r.patch({ rewardrules: signupRules })).status).toBe(200);
		expect((await r.event("Signup", "1")).body.message).toMatch(/no new event or reward/);
		expect(await r.rewardsOf(r.referrer.userkey)).toHaveLength(1);
		expect(await r.rewardsOf(r.friend.userkey)).toHaveLength(1);
	});

	it("a replay completes the decision taken when the event was first recorded, whatever the rules became", async () => {
		const r = await referral(signupRules);
		await r.event("Signup", "1");
		// The referrer's reward of customid 1 gets lost (a call that died half way): the replay restores exactly it.
		const before = await r.rewardsOf(r.referrer.userkey);
		await r.patch({ rewardrules: [{ ...asInput((await r.rules())[0]!), reward: 99 }] });
		await r.event("Signup", "1");
		expect((await r.rewardsOf(r.referrer.userkey)).map((x) => x.amount)).toEqual(before.map((x) => x.amount));
	});

	it("an edit that keeps the ruleid keeps its frequency history", async () => {
		const r = await referral([{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD", rewardfrequency: 1 }]);
		await r.event("Purchase", "1");
		const [rule] = await r.rules();
		const patched = await r.patch({ rewardrules: [{ ...asInput(rule!), reward: 20 }] });
		expect(patched.body.rewardrules).toMatchObject([{ ruleid: rule!.ruleid, reward: 20 }]);
		await r.event("Purchase", "2");
		expect((await r.rewardsOf(r.referrer.userkey)).map((x) => x.amount)).toEqual([10]);
	});

	it("a rule left out of a PATCH is retired: not listed, never fires; an unknown ruleid is 400 and changes nothing", async () => {
		const r = await referral(signupRules);
		const [referrerRule, friendRule] = await r.rules();
		expect((await r.patch({ rewardrules: [asInput(friendRule!)] })).body.rewardrules).toHaveLength(1);
		await r.event("Signup", "5");
		expect(await r.rewardsOf(r.referrer.userkey)).toEqual([]);
		expect(await r.rewardsOf(r.friend.userkey)).toHaveLength(1);
		// A retired rule cannot be revived by id.
		const refused = await r.patch({ rewardrules: [asInput(referrerRule!)] });
		expect(refused.status).toBe(400);
		expect(await r.rules()).toMatchObject([{ ruleid: friendRule!.ruleid }]);
	});

	it("an event whose reward would be out of bounds is 400 with nothing stored, and its customid stays usable", async () => {
		const r = await referral([{ rewardusertype: "Referrer", eventname: "Purchase", reward: 20, rewardunit: "%" }]);
		// 20 % of 60,000,000,000 is above the limit of one reward (1,000,000,000).
		const huge = await r.event("Purchase", "77", "60000000000");
		expect(huge.status).toBe(400);
		expect(huge.body).toMatchObject({ errorcode: "validation_failed", fields: ["transactionvalue"] });
		const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(r.appid).first();
		expect(stored).toEqual({ n: 0 });
		const friendStatus = await env.DB.prepare("SELECT status FROM users WHERE userkey = ?").bind(r.friend.userkey).first();
		expect(friendStatus).toEqual({ status: "SignUp" });
		const sane = await r.event("Purchase", "77", "100");
		expect(sane.status).toBe(200);
		expect((await r.rewardsOf(r.referrer.userkey)).map((x) => x.amount)).toEqual([20]);
	});

	it("conversion.recorded is queued in the friend's ledger with its rewards, so it leaves even if the Worker dies after the grants", async () => {
		const r = await referral(signupRules);
		const friendLedger = ledgerFor(env, r.appid, r.friend.userkey);
		// Stop the flush from delivering, as if the process died right after the grant's transaction.
		await env.DB.exec("ALTER TABLE outbox_events RENAME TO outbox_events_offline");
		try {
			expect((await r.event("Signup", "9")).status).toBe(200);
		} finally {
			await env.DB.exec("ALTER TABLE outbox_events_offline RENAME TO outbox_events");
		}
		// The webhook waits in the friend's ledger outbox (backing off); make it due and flush.
		await runInDurableObject(friendLedger, (_l, state) => state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0"));
		await friendLedger.flush();
		const row = await env.DB.prepare("SELECT payload FROM outbox_events WHERE eventid = ?")
			.bind(`evt_conversion_${r.appid}_9`)
			.first<{ payload: string }>();
		expect(JSON.parse(row!.payload)).toMatchObject({
			customid: "9",
			rewards: [
				{ userkey: r.friend.userkey, usertype: "Friend", reward: "5" },
				{ userkey: r.referrer.userkey, usertype: "Referrer", reward: "10" },
			],
		});
	});
});

describe("unit-safe redeem by amount", () => {
	it("with approved rewards in two units and none named: 400 rewardunit_required, nothing redeemed", async () => {
		const r = await referral([
			{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
			{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "PTS" },
		]);
		await r.event("Signup", "1");
		const mixed = await r.api("redeemrewards", { userkey: r.referrer.userkey, amount: "10.5" });
		expect(mixed.status).toBe(400);
		expect(mixed.body).toMatchObject({ errorcode: "rewardunit_required", rewardunits: ["PTS", "USD"] });
		expect((await r.rewardsOf(r.referrer.userkey)).every((x) => x.redeemed === 0)).toBe(true);
		expect((await r.api("redeemrewards", { userkey: r.referrer.userkey, amount: "10.5", rewardunit: "USD" })).body).toMatchObject({
			errorcode: "insufficient_balance",
		});
		expect((await r.api("redeemrewards", { userkey: r.referrer.userkey, amount: "9.5", rewardunit: "USD" })).status).toBe(200);
	});

	it("an amount with more than two decimals is 400, not rounded", async () => {
		const r = await referral(signupRules);
		await r.event("Signup", "1");
		for (const amount of ["1.005", 1.005, "0.001"]) {
			const response = await r.api("redeemrewards", { userkey: r.referrer.userkey, amount });
			expect(response.status).toBe(400);
			expect(response.body).toMatchObject({ errorcode: "validation_failed", fields: ["amount"] });
		}
		expect((await r.api("redeemrewards", { userkey: r.referrer.userkey, amount: 1.25 })).body).toMatchObject({ redeemed: 1.25 });
	});
});
