import { describe, expect, it } from "vitest";
import { admin, createApp } from "../support/api";
import { conversion, follow, registerUser, signIn } from "../support/dashboard";

/**
 * The dashboard's Stripe parts (issue 23): an owner connects and disconnects
 * Stripe on the app page, which shows the webhook URL to paste into Stripe;
 * the campaign form offers the Stripe distribution; a user page shows each
 * Stripe reward's payout state and offers a retry.
 */

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
	for (let i = 0; i < 200; i++) {
		const value = await probe();
		if (value !== undefined) return value;
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`never: ${what}`);
}

describe("dashboard: Stripe", () => {
	it("connects and disconnects Stripe, showing the webhook URL and never the keys", async () => {
		const app = await createApp();
		const session = await signIn();
		const page = await (await session.get(`/dashboard/apps/${app.appid}`)).text();
		expect(page).toContain(`/integrations/stripe/${app.appid}`);
		expect(page).toContain("Not connected");
		const bad = await follow(
			session,
			await session.post(`/dashboard/apps/${app.appid}/stripe`, { secretkey: "nope", webhooksecret: "nope" }),
		);
		expect(bad.html).toContain("stripe.secretkey");
		const res = await session.post(`/dashboard/apps/${app.appid}/stripe`, {
			secretkey: "sk_test_dashboardKey9876",
			webhooksecret: "whsec_dashboardSecret000",
			eventname: "Purchase",
		});
		const connected = await follow(session, res);
		expect(connected.html).toContain("Stripe connected.");
		expect(connected.html).toContain("key ending 9876");
		expect(connected.html).toContain("payments become Purchase conversions");
		expect(connected.html).not.toContain("sk_test_dashboardKey9876");
		expect(connected.html).not.toContain("whsec_dashboardSecret000");
		const off = await follow(session, await session.post(`/dashboard/apps/${app.appid}/stripe/disconnect`, {}));
		expect(off.html).toContain("Stripe disconnected.");
		expect((await admin("GET", `/apps/${app.appid}`)).body.stripe.connected).toBe(false);
		const audit = (await admin("GET", `/apps/${app.appid}/audit`)).body.entries.map((e: { action: string }) => e.action);
		expect(audit).toEqual(expect.arrayContaining(["app.stripe_connect", "app.stripe_disconnect"]));
	});

	it("offers the Stripe distribution, shows a reward's payout state and retries it", async () => {
		const app = await createApp({
			distribution: "Stripe",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		});
		const session = await signIn();
		expect(await (await session.get(`/dashboard/apps/${app.appid}/campaigns/new`)).text()).toContain('value="Stripe"');
		const referrer = await registerUser(app, { email: "stripe.ref@example.com" });
		const friend = await registerUser(app, { email: "stripe.friend@example.com", referrercode: referrer.referralcode });
		await conversion(app, friend.userkey);
		// Not connected: the payout fails with the reason on the reward, through the Stripe queue.
		const reward = await until("the payout's failure in the projection", async () => {
			const list = (await admin("GET", `/apps/${app.appid}/rewards?userkey=${referrer.userkey}`)).body.rewards;
			return list[0]?.payoutstate === "failed" ? list[0] : undefined;
		});
		expect(reward).toMatchObject({ rewardstatus: "Approved", rewardtype: "Stripe", payoutid: null });
		expect(reward.comment).toContain("Stripe is not connected");
		const user = await (await session.get(`/dashboard/apps/${app.appid}/users/${referrer.userkey}`)).text();
		expect(user).toContain("payout failed (the comment says why)");
		const retried = await follow(session, await session.post(`/dashboard/apps/${app.appid}/users/${referrer.userkey}/payouts/retry`, {}));
		expect(retried.html).toContain("Payout of 1 reward(s) queued.");
		const refused = await app.api("redeemrewards", { userkey: referrer.userkey, rewarddtlids: [reward.rewarddtlid] });
		expect(refused).toMatchObject({ status: 400, body: { errorcode: "not_wallet_distribution" } });
	});
});
