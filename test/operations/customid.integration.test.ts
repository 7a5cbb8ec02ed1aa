import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { customIdToken } from "../../src/domain/ids";
import { ledgerFor } from "../../src/ledger/stub";
import { MAX_EVENTID } from "../../src/outbox/events";
import { hookUrl, uniqueKey, waitForReceived } from "../outbox/support";
import { createApp, withWebhook } from "../support/api";
import { until } from "../support/until";

/**
 * customid is the product's own id of an event (issue 35): any text of 1-100
 * printable characters, compared exactly; integers keep their old meaning,
 * so a number and its digits as text are one event.
 */
async function referral(hooks = withWebhook()) {
	const app = await createApp(
		{ rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 5, rewardunit: "USD" }] },
		hooks,
	);
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "friend@x.com", referrercode: referrer.referralcode })).body;
	const order = (customid: unknown) =>
		app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Transaction",
			transactionvalue: "20",
			customid,
			growthhack: "SaaS_Referrals",
		});
	const rewards = () => ledgerFor(env, app.appid, referrer.userkey).listRewards();
	// D1's rows of the events follow the projection (issue 49): read once `n` of them are there.
	const stored = (n: number) =>
		until(
			"events in D1",
			async () =>
				(
					await env.DB.prepare("SELECT customid FROM conversion_events WHERE appid = ? ORDER BY customid").bind(app.appid).all()
				).results.map((r) => r.customid),
			(rows) => rows.length >= n,
		);
	return { ...app, referrer, order, rewards, stored };
}

describe("customid", () => {
	it("takes an order id as it is: the same one twice is one event", async () => {
		const { order, rewards, stored } = await referral();
		expect((await order("ord_8f3a-77")).body).toMatchObject({ success: true, duplicate: false });
		expect((await order("ord_8f3a-77")).body).toMatchObject({ success: true, duplicate: true });
		expect(await rewards()).toHaveLength(1);
		expect(await stored(1)).toEqual(["ord_8f3a-77"]);
	});

	it("is one event for 1001 and '1001' (and '01001'), whichever comes first", async () => {
		const { order, rewards, stored } = await referral();
		expect((await order(1001)).body.duplicate).toBe(false);
		expect((await order("1001")).body.duplicate).toBe(true);
		expect((await order("01001")).body.duplicate).toBe(true);
		expect((await order("2002")).body.duplicate).toBe(false);
		expect((await order(2002)).body.duplicate).toBe(true);
		expect(await rewards()).toHaveLength(2);
		expect(await stored(2)).toEqual(["1001", "2002"]);
	});

	it("compares exactly: case and inner characters make another event", async () => {
		const { order, rewards, stored } = await referral();
		const ids = ["in_1PqR", "IN_1PQR", "in_1PqR ", "3fa85f64-5717-4562-b3fc-2c963f66afa6", "ordre n°7 ✓"];
		for (const id of ids) expect((await order(id)).body, id).toMatchObject({ success: true, duplicate: false });
		expect(await rewards()).toHaveLength(ids.length);
		expect((await stored(ids.length)).sort()).toEqual([...ids].sort());
	});

	it("takes up to 100 characters (emoji count as one) and refuses more, storing nothing", async () => {
		const { order, stored } = await referral();
		expect((await order("é".repeat(100))).status).toBe(200);
		expect((await order("😀".repeat(100))).status).toBe(200);
		for (const bad of ["x".repeat(101), "", "  ", "tab\there", "nul\u0000", 12.5, true, null]) {
			const res = await order(bad);
			expect(res.status, JSON.stringify(bad)).toBe(400);
			expect(res.body.fields, JSON.stringify(bad)).toContain("customid");
		}
		expect(await stored(2)).toHaveLength(2);
	});

	it("gives the conversion webhook an ASCII webhook-id whatever the customid", async () => {
		const { appid, order, referrer } = await referral();
		await order("ordre n°7 ✓");
		await order("1001");
		await ledgerFor(env, appid, referrer.userkey).flush();
		const ids = await env.DB.prepare("SELECT eventid FROM outbox_events WHERE appid = ? AND type = 'conversion.recorded' ORDER BY eventid")
			.bind(appid)
			.all<{ eventid: string }>();
		expect(ids.results.map((r) => r.eventid)).toEqual([
			`evt_conversion_${appid}_1001`,
			`evt_conversion_${appid}_${customIdToken("ordre n°7 ✓")}`,
		]);
		for (const { eventid } of ids.results) expect(eventid).toMatch(/^[\x21-\x7e]+$/);
	});

	it("delivers the webhooks of the longest customid: 100 emoji make an event id of some 570 characters", async () => {
		const key = uniqueKey("long-customid");
		const { appid, order, api, referrer } = await referral({ webhookurl: hookUrl(key) });
		const customid = "😀".repeat(100);
		expect((await order(customid)).status).toBe(200);
		expect((await api("reverseconversionevent", { customid })).body).toMatchObject({ success: true });
		await ledgerFor(env, appid, referrer.userkey).flush();
		// Every event of it reaches the endpoint (the consumer once dropped a message whose event id passed 200 characters).
		const received = await waitForReceived(key, 7, 20_000);
		expect(received.map((r) => JSON.parse(r.body).type).sort()).toEqual([
			"conversion.recorded",
			"conversion.reversed",
			"referral.attributed",
			"reward.created",
			"reward.reversed",
			"user.registered",
			"user.registered",
		]);
		const ids = received.map((r) => r.headers["webhook-id"] ?? "");
		expect(Math.max(...ids.map((id) => id.length))).toBeGreaterThan(500);
		expect(Math.max(...ids.map((id) => id.length))).toBeLessThanOrEqual(MAX_EVENTID);
	});

	it("reverses an event named by a text customid", async () => {
		const { api, order, rewards } = await referral();
		await order("cs_test_a1B2");
		const res = await api("reverseconversionevent", { customid: "cs_test_a1B2" });
		expect(res.body).toMatchObject({ success: true, customid: "cs_test_a1B2", full: true });
		expect((await api("reverseconversionevent", { customid: "CS_TEST_A1B2" })).body.errorcode).toBe("event_not_found");
		expect((await rewards())[0]).toMatchObject({ rewardstatus: "Rejected" });
	});
});
