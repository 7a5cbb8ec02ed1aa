import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, client, createApp } from "../support/api";

/** Test mode (docs/test-mode.md): an app's test keys see only what test keys made, and share the app's campaigns and settings. */

async function appWithTestKeys() {
	const app = await createApp();
	const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
	return { ...app, testapikey, testprivatekey, test: client({ apikey: testapikey, privatekey: testprivatekey }) };
}

let nextCustomId = 5000;
const signup = (api: ReturnType<typeof client>, userkey: string) =>
	api("registerconversionevent", { userkey, eventname: "Signup", customid: `ord_${nextCustomId++}`, growthhack: "SaaS_Referrals" });

describe("test mode", () => {
	it("answers a test key pair with the app, prefixed ak_test_ / pk_test_", async () => {
		const app = await appWithTestKeys();
		expect(app.testapikey).toMatch(/^ak_test_[a-z0-9]{32}$/);
		expect(app.testprivatekey).toMatch(/^pk_test_[a-z0-9]{48}$/);
		expect(app.apikey).not.toContain("test");
		// The twin is no app of the admin API and no entry of the app list.
		expect((await admin("GET", `/apps/${app.appid}_test`)).status).toBe(404);
	});

	it("keeps what test keys make away from live keys, and the reverse", async () => {
		const app = await appWithTestKeys();
		const tRef = (await app.test("register", { email: "ref@x.com", name: "Ref" })).body;
		const tFriend = (await app.test("register", { email: "friend@x.com", name: "Fran", referrercode: tRef.referralcode })).body;
		expect(tFriend.success).toBe(true);
		expect((await signup(app.test, tFriend.userkey)).body).toMatchObject({ success: true, duplicate: false });

		// Live keys: the test users are unknown, their code refers nobody, the same email registers a new live user.
		const unknown = await app.api("getuserbalance", { userkey: tRef.userkey, campaignid: app.campaignid });
		expect(unknown.status).toBe(404);
		expect(unknown.body.errorcode).toBe("user_not_found");
		expect((await app.api("validatereferrercode", { referrercode: tRef.referralcode })).body.success).toBe(false);
		const lRef = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
		expect(lRef.userkey).not.toBe(tRef.userkey);

		// And the reverse: test keys do not see the live user.
		const hidden = await app.test("getuserbalance", { userkey: lRef.userkey, campaignid: app.campaignid });
		expect(hidden.status).toBe(404);
		expect((await app.test("validatereferrercode", { referrercode: lRef.referralcode })).body.success).toBe(false);

		// The test rewards sit in the twin's ledgers; the live app's ledger of that userkey has none.
		expect(await ledgerFor(env, `${app.appid}_test`, tRef.userkey).listRewards()).toEqual([
			expect.objectContaining({ usertype: "Referrer", reward: "10", rewardunit: "USD" }),
		]);
		expect(await ledgerFor(env, app.appid, tRef.userkey).listRewards()).toEqual([]);
		const live = await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE appid = ?").bind(app.appid).first<{ n: number }>();
		expect(live?.n).toBe(1);
	});

	it("shares the live app's campaigns: a campaign made live rewards test events at once", async () => {
		const app = await appWithTestKeys();
		const campaign = await app.test("getcampaigndata", { campaignid: app.campaignid });
		expect(campaign.status).toBe(200);
		const second = await admin<{ campaignid: number }>("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "Second",
			campaignstartdate: "2026-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Upgrade", reward: 7, rewardunit: "USD" }],
		});
		expect(second.status).toBe(201);
		const ref = (await app.test("register", { email: "a@x.com", campaignid: second.body.campaignid })).body;
		const friend = (await app.test("register", { email: "b@x.com", referrercode: ref.referralcode })).body;
		const upgrade = await app.test("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Upgrade",
			customid: "u1",
			campaignid: second.body.campaignid,
			growthhack: "SaaS_Referrals",
		});
		expect(upgrade.body).toMatchObject({ success: true });
		expect(await ledgerFor(env, `${app.appid}_test`, ref.userkey).listRewards()).toEqual([
			expect.objectContaining({ reward: "7", campaignid: String(second.body.campaignid) }),
		]);
		// A campaign id of another app is not the twin's either.
		const other = await createApp();
		const foreign = await app.test("getcampaigndata", { campaignid: other.campaignid });
		expect(foreign.body.errorcode).toBe("campaign_not_found");
	});

	it("shares the app's settings: a change of the live app applies to test at once", async () => {
		const app = await appWithTestKeys();
		const patched = await admin("PATCH", `/apps/${app.appid}`, { landingurl: "https://new.example.com/join", timezone: "Europe/Paris" });
		expect(patched.status).toBe(200);
		const rotated = await admin<{ webhooksecret: string }>("POST", `/apps/${app.appid}/rotate-webhooksecret`);
		const twin = await env.DB.prepare("SELECT landingurl, timezone, webhook_secret, default_campaignid FROM apps WHERE live_appid = ?")
			.bind(app.appid)
			.first();
		expect(twin).toEqual({
			landingurl: "https://new.example.com/join",
			timezone: "Europe/Paris",
			webhook_secret: rotated.body.webhooksecret,
			default_campaignid: app.campaignid,
		});
		// A private key is each mode's own: rotating the live one leaves the test keys working.
		await admin("POST", `/apps/${app.appid}/rotate-privatekey`);
		expect((await app.test("register", { email: "still@x.com" })).status).toBe(200);
	});

	it("rotates the test keys: the old pair stops working, the new one sees the same test data", async () => {
		const app = await appWithTestKeys();
		const user = (await app.test("register", { email: "keep@x.com" })).body;
		const rotated = await admin<{ testapikey: string; testprivatekey: string }>("POST", `/apps/${app.appid}/testkeys`, { rotate: true });
		expect(rotated.status).toBe(200);
		expect(rotated.body.testapikey).toMatch(/^ak_test_/);
		expect(rotated.body.testapikey).not.toBe(app.testapikey);
		const old = await app.test("getuserbalance", { userkey: user.userkey, campaignid: app.campaignid });
		expect(old.status).toBe(401);
		const fresh = client({ apikey: rotated.body.testapikey, privatekey: rotated.body.testprivatekey });
		expect((await fresh("getuserbalance", { userkey: user.userkey, campaignid: app.campaignid })).status).toBe(200);
		expect((await admin("POST", "/apps/app_nosuchapp/testkeys")).status).toBe(404);
		expect((await admin("POST", `/apps/${app.appid}_test/testkeys`)).status).toBe(404);
	});

	it("refuses to replace an app's test keys without rotate, changing nothing", async () => {
		const app = await appWithTestKeys();
		const user = (await app.test("register", { email: "stays@x.com" })).body;
		const auditBefore = (await admin<{ entries: unknown[] }>("GET", `/apps/${app.appid}/audit?action=app.rotate_testkeys`)).body.entries;
		for (const body of [undefined, {}, { rotate: false }]) {
			const again = await admin("POST", `/apps/${app.appid}/testkeys`, body);
			expect(again.status, JSON.stringify(body)).toBe(409);
			expect(again.body).toMatchObject({ success: false, errorcode: "testkeys_exist", testapikey: app.testapikey });
			expect(again.body.message).toMatch(/stops that one working .* nothing was changed\. Send \{"rotate": true\}/);
			expect(again.body.testprivatekey).toBeUndefined();
		}
		// The pair in use still works and sees its data; no rotation was audited.
		expect((await app.test("getuserbalance", { userkey: user.userkey, campaignid: app.campaignid })).status).toBe(200);
		expect((await admin<{ entries: unknown[] }>("GET", `/apps/${app.appid}/audit?action=app.rotate_testkeys`)).body.entries).toEqual(
			auditBefore,
		);
		expect((await admin("POST", `/apps/${app.appid}/testkeys`, { rotate: "yes" })).status).toBe(400);
	});

	it("creates the test pair of an app made before test mode", async () => {
		const app = await createApp();
		await env.DB.prepare("DELETE FROM apps WHERE live_appid = ?").bind(app.appid).run();
		const made = await admin<{ testapikey: string; testprivatekey: string }>("POST", `/apps/${app.appid}/testkeys`);
		expect(made.status).toBe(200);
		const test = client({ apikey: made.body.testapikey, privatekey: made.body.testprivatekey });
		const user = await test("register", { email: "new@x.com" });
		expect(user.status).toBe(200);
		expect((await app.api("getuserbalance", { userkey: user.body.userkey, campaignid: app.campaignid })).status).toBe(404);
	});
});
