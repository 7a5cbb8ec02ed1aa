import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newUserKey } from "../../src/domain/ids";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";

/**
 * Made-up ids leave nothing (issue 20 item 4): a ledger gets its tables only
 * from its first write, so reads and refused changes of an unknown user or
 * reward answer 404 without creating a stored ledger.
 */

/** The ledger's own tables (not the runtime's `_cf_` ones): none means nothing was stored for it. */
const tablesOf = (appid: string, userkey: string) =>
	runInDurableObject(ledgerFor(env, appid, userkey), (_ledger, state) =>
		state.storage.sql
			.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'")
			.toArray()
			.map((t) => t.name),
	);

describe("no ledger for an unknown id", () => {
	it("checkrewardstatus, getuserbalance and changerewardstatus with made-up ids are 404 and create no ledger", async () => {
		const app = await createApp();
		const [a, b, c] = [newUserKey(), newUserKey(), newUserKey()];
		const check = await app.api("checkrewardstatus", { rewarddtlid: `${a}-1` });
		expect(check.status).toBe(404);
		expect(check.body.errorcode).toBe("reward_not_found");
		const balance = await app.api("getuserbalance", { userkey: b, campaignid: String(app.campaignid) });
		expect(balance.status).toBe(404);
		expect(balance.body.errorcode).toBe("user_not_found");
		const change = await app.api("changerewardstatus", {
			rewardslist: [
				{ rewarddtlid: `${c}-1`, rewardstatus: "Rejected" },
				{ rewarddtlid: `${a}-2`, rewardstatus: "Rejected" },
			],
		});
		expect(change.status).toBe(404);
		expect(change.body.errorcode).toBe("reward_not_found");
		for (const userkey of [a, b, c]) expect(await tablesOf(app.appid, userkey)).toEqual([]);
	});

	it("a real user's ledger is created by its first reward, and its reads work as before", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "r@x.com" })).body;
		expect(await tablesOf(app.appid, referrer.userkey)).toEqual([]);
		const friend = (await app.api("register", { email: "f@x.com", referrercode: referrer.referralcode })).body;
		await app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Signup", customid: "1", growthhack: "SaaS_Referrals" });
		expect(await tablesOf(app.appid, referrer.userkey)).toContain("rewards");
		const balance = await app.api("getuserbalance", { userkey: referrer.userkey, campaignid: String(app.campaignid) });
		expect(balance.body.userbalance[0].total).toBe(10);
	});
});
