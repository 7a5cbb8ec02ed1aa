import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app as worker } from "../../src/http/app";
import { COUNT_HEADER } from "../../src/http/d1-metrics";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";

/**
 * A friend's move to Converted in its referrer's ledger (the friends page,
 * issue 49) is told once: the friend's profile keeps that it was told
 * (ledger/profile.ts `convertedTold`), so its later conversions make no
 * ledger call to say it again, also when its referrer gets no reward for
 * them (then the friend's ledger tells it in its grant's call, and keeps that
 * it was told in its grant's transaction).
 */

describe("a friend's conversion told to its referrer's ledger", () => {
	it("is told by the first conversion only, from the friend's ledger in its grant's call", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Friend", eventname: "Purchase", reward: 5, rewardunit: "USD" }] });
		const referrer = (await app.api("register", { email: "told-ref@x.com" })).body;
		const friend = (await app.api("register", { email: "told-friend@x.com", referrercode: referrer.referralcode })).body;
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1", enumerable: true } });
		let customid = 0;
		const ledgerCalls = async () => {
			const ctx = createExecutionContext();
			const res = await worker.request(
				"/saas/v1_0/registerconversionevent",
				{
					method: "POST",
					headers: { "content-type": "application/json", [COUNT_HEADER]: "1" },
					body: JSON.stringify({
						apikey: app.apikey,
						privatekey: app.privatekey,
						userkey: friend.userkey,
						eventname: "Purchase",
						customid: `told-${++customid}`,
						growthhack: "SaaS_Referrals",
					}),
				},
				flagged,
				ctx,
			);
			await waitOnExecutionContext(ctx);
			expect(res.status).toBe(200);
			return Number(res.headers.get("x-do-calls"));
		};
		const first = await ledgerCalls();
		const second = await ledgerCalls();
		const third = await ledgerCalls();
		// The Worker's ledger calls (the gate's and the ledgers' own are counted by conversion-object-calls): the
		// friend's and the referrer's profiles, the friend's grant. The first conversion's mark in the referrer's ledger
		// is the friend's ledger's call, which keeps that it was told in its grant's transaction (issue 49, "one call
		// fewer": 5 Worker calls the first time before); the later ones mark nothing.
		expect({ first, second, third }).toEqual({ first: 3, second: 3, third: 3 });
		// The referrer's page shows the friend Converted, once, and the friend got its three rewards.
		const page = await app.api("getfriendsandrewards", { userkey: referrer.userkey });
		expect(page.body.friends).toEqual([expect.objectContaining({ userkey: friend.userkey, status: "Converted" })]);
		expect(await ledgerFor(env, app.appid, friend.userkey).listRewards()).toHaveLength(3);
	});
});
