import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp, withWebhook } from "../support/api";

/**
 * Issue 19: the friend's and the referrer's ledgers work in parallel (the friend's tables are made while the referrer's grant
 * runs; since issue 33 the friend's rewards are written with the event once the referrer answered); conversion.recorded
 * leaves once with both sides' reward ids.
 */

const BOTH = [
	{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
	{ rewardusertype: "Friend", eventname: "Purchase", reward: 5, rewardunit: "USD" },
];

async function referral(rewardrules: Record<string, unknown>[]) {
	const app = await createApp({ rewardrules }, withWebhook());
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", referrercode: referrer.referralcode })).body;
	const purchase = (customid: string) =>
		app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals" });
	return { ...app, referrer, friend, purchase };
}

const webhooksOf = async (appid: string, customid: string) =>
	(
		await env.DB.prepare("SELECT payload FROM outbox_events WHERE eventid = ?")
			.bind(`evt_conversion_${appid}_${customid}`)
			.all<{ payload: string }>()
	).results.map((r) => JSON.parse(r.payload) as { rewards: { rewarddtlid: string; usertype: string; userkey: string }[] });

describe("parallel grants of a conversion", () => {
	it("creates the friend's ledger while the referrer's ledger is still busy, and writes its rewards with the event once the referrer answered", async () => {
		const r = await referral(BOTH);
		const referrerLedger = ledgerFor(env, r.appid, r.referrer.userkey);
		const friendLedger = ledgerFor(env, r.appid, r.friend.userkey);
		let release = () => {};
		const busy = new Promise<void>((resolve) => {
			release = resolve;
		});
		// The referrer's ledger takes no call until released (its blocker answers only then, so it is not awaited yet).
		let blocking = false;
		const blocker = runInDurableObject(referrerLedger, async (_ledger, state) => {
			blocking = true;
			await state.blockConcurrencyWhile(() => busy);
		});
		await vi.waitFor(() => expect(blocking).toBe(true));
		let answered = false;
		const pending = r.purchase("501").then((res) => {
			answered = true;
			return res;
		});
		// The friend's tables (a first reward's costliest write) are made meanwhile; its rewards wait for the event's
		// other half, so they and the event are one transaction (issue 33: the event rides in the projection entry).
		await vi.waitFor(
			() =>
				runInDurableObject(friendLedger, (_l, state) =>
					expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'rewards'").one().n).toBe(1),
				),
			{ timeout: 5000 },
		);
		expect(await friendLedger.listRewards()).toHaveLength(0);
		expect(answered).toBe(false);
		release();
		await blocker;
		expect((await pending).body).toMatchObject({ success: true, message: "Conversion recorded; 2 reward(s) created." });
		expect(await referrerLedger.listRewards()).toHaveLength(1);
		expect(await friendLedger.listRewards()).toHaveLength(1);
	});

	it("queues conversion.recorded once, from the friend's ledger, with the friend's and the referrer's reward ids, retries included", async () => {
		const r = await referral(BOTH);
		const friendLedger = ledgerFor(env, r.appid, r.friend.userkey);
		const referrerLedger = ledgerFor(env, r.appid, r.referrer.userkey);
		const results = await Promise.all([r.purchase("601"), r.purchase("601"), r.purchase("601")]);
		expect(results.map((x) => x.status)).toEqual([200, 200, 200]);
		expect((await r.purchase("601")).body.duplicate).toBe(true);
		await friendLedger.flush();
		await referrerLedger.flush();
		const [friendReward] = await friendLedger.listRewards();
		const [referrerReward] = await referrerLedger.listRewards();
		const webhooks = await webhooksOf(r.appid, "601");
		expect(webhooks).toHaveLength(1);
		expect(webhooks[0]?.rewards).toEqual([
			expect.objectContaining({ rewarddtlid: friendReward?.rewarddtlid, usertype: "Friend", userkey: r.friend.userkey }),
			expect.objectContaining({ rewarddtlid: referrerReward?.rewarddtlid, usertype: "Referrer", userkey: r.referrer.userkey }),
		]);
		// The referrer's ledger queued no webhook of its own for the event.
		await runInDurableObject(referrerLedger, (_ledger, state) => {
			expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM outbox WHERE kind = 'webhook'").one().n).toBe(0);
		});
	});

	it("when only the referrer is rewarded, announces from the referrer's ledger and grants nothing in the friend's", async () => {
		const r = await referral([{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" }]);
		expect((await r.purchase("701")).status).toBe(200);
		const referrerLedger = ledgerFor(env, r.appid, r.referrer.userkey);
		await referrerLedger.flush();
		const [reward] = await referrerLedger.listRewards();
		expect((await webhooksOf(r.appid, "701"))[0]?.rewards).toEqual([expect.objectContaining({ rewarddtlid: reward?.rewarddtlid })]);
		// The friend's ledger exists since its referred registration (it keeps its profile and pointer, issue 49), but the
		// conversion writes nothing there: no reward, nothing announced.
		const friendLedger = ledgerFor(env, r.appid, r.friend.userkey);
		await friendLedger.flush();
		expect(await friendLedger.listRewards()).toEqual([]);
	});
});
