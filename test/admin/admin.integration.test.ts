import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, campaignBody, createApp, listedApps, request } from "../support/api";

describe("admin API", () => {
	it("is 401 without the admin token or with a wrong one", async () => {
		for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: "test-admin-token" }] as Record<string, string>[]) {
			const res = await request("/admin/v1/apps", { headers });
			expect(res.status).toBe(401);
			expect(await res.json()).toMatchObject({ success: false, errorcode: "unauthorized" });
		}
	});

	it("creates an app with exactly the decided response and stores only a hash of the private key", async () => {
		const res = await admin("POST", "/apps", {
			name: "Shop",
			landingurl: "https://shop.example.com",
			webhookurl: "https://hooks.example.com/x",
		});
		expect(res.status).toBe(201);
		expect(Object.keys(res.body).sort()).toEqual(["apikey", "appid", "privatekey", "testapikey", "testprivatekey", "webhooksecret"]);
		expect(res.body.webhooksecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
		const row = await env.DB.prepare("SELECT * FROM apps WHERE appid = ?").bind(res.body.appid).first<Record<string, unknown>>();
		expect(JSON.stringify(row)).not.toContain(res.body.privatekey);
		expect(row?.privatekey_hash).toMatch(/^[0-9a-f]{64}$/);
	});

	it("lists, reads and updates apps without ever showing the private key", async () => {
		const { appid, privatekey } = await createApp();
		expect((await listedApps()).some((a) => a.appid === appid)).toBe(true);
		const read = await admin("GET", `/apps/${appid}`);
		expect(read.status).toBe(200);
		expect(JSON.stringify(read.body)).not.toContain(privatekey);
		const updated = await admin("PATCH", `/apps/${appid}`, {
			webhookurl: "https://hooks.example.com/new",
			emailsender: "team@shop.example.com",
		});
		expect(updated.body).toMatchObject({
			webhookurl: "https://hooks.example.com/new",
			emailsender: "team@shop.example.com",
			name: "Test app",
		});
		expect((await admin("GET", "/apps/app_missing")).status).toBe(404);
	});

	it("rotates the webhook secret", async () => {
		const { appid, webhooksecret } = await createApp();
		const res = await admin("POST", `/apps/${appid}/rotate-webhooksecret`);
		expect(res.body.webhooksecret).toMatch(/^whsec_/);
		expect(res.body.webhooksecret).not.toBe(webhooksecret);
	});

	it("names the bad field in validation errors", async () => {
		const cases: [string, unknown, string][] = [
			["/apps", {}, "name"],
			["/apps", { name: "x", webhookurl: "ftp://nope" }, "webhookurl"],
		];
		for (const [path, body, field] of cases) {
			const res = await admin("POST", path, body);
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ errorcode: "validation_failed", fields: [field] });
			expect(res.body.message).toContain(field);
		}
		const { appid } = await createApp();
		const bad = await admin(
			"POST",
			`/apps/${appid}/campaigns`,
			campaignBody({ campaignbgcolor: "red", rewardrules: [{ rewardusertype: "Nobody" }] }),
		);
		expect(bad.status).toBe(400);
		expect(bad.body.fields).toEqual(expect.arrayContaining(["campaignbgcolor", "rewardrules.0.rewardusertype", "rewardrules.0.eventname"]));
	});

	it("creates campaigns; the first is the app's default; reads and lists them", async () => {
		const { appid, campaignid } = await createApp();
		const second = await admin(
			"POST",
			`/apps/${appid}/campaigns`,
			campaignBody({ campaignname: "Second", distribution: "Coupon", holddays: 7, autoapprove: false }),
		);
		expect(second.status).toBe(201);
		expect((await admin("GET", `/apps/${appid}`)).body.defaultcampaignid).toBe(campaignid);
		const read = await admin("GET", `/apps/${appid}/campaigns/${second.body.campaignid}`);
		expect(read.body).toMatchObject({
			campaignname: "Second",
			distribution: "Coupon",
			holddays: 7,
			autoapprove: false,
			couponsavailable: 0,
		});
		expect(read.body.rewardrules).toHaveLength(2);
		const list = await admin("GET", `/apps/${appid}/campaigns`);
		expect(list.body.campaigns.map((c: { campaignid: number }) => c.campaignid)).toEqual([campaignid, second.body.campaignid]);
	});

	it("updates only the fields sent, and replaces rules when sent", async () => {
		const { appid, campaignid } = await createApp();
		const res = await admin("PATCH", `/apps/${appid}/campaigns/${campaignid}`, {
			holddays: 3,
			rewardrules: [{ rewardusertype: "referrer", eventname: "Transaction", reward: 5, rewardunit: "%", maxrewardamount: 20 }],
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ holddays: 3, campaignname: "Give $10, get $10", autoapprove: true });
		expect(res.body.rewardrules).toEqual([
			expect.objectContaining({ rewardusertype: "Referrer", eventname: "Transaction", reward: 5, maxrewardamount: 20 }),
		]);
	});

	it("never reads or changes a campaign through another app's path", async () => {
		const mine = await createApp();
		const theirs = await createApp();
		expect((await admin("GET", `/apps/${mine.appid}/campaigns/${theirs.campaignid}`)).status).toBe(404);
		expect((await admin("PATCH", `/apps/${mine.appid}/campaigns/${theirs.campaignid}`, { campaignname: "Hijacked" })).status).toBe(404);
		expect((await admin("POST", `/apps/${mine.appid}/campaigns/${theirs.campaignid}/coupons`, { coupons: [{ coupon: "X" }] })).status).toBe(
			404,
		);
		expect((await admin("GET", `/apps/${theirs.appid}/campaigns/${theirs.campaignid}`)).body.campaignname).toBe("Give $10, get $10");
	});

	it("adds coupon codes to a campaign's pool, skipping codes already there", async () => {
		const { appid, campaignid } = await createApp({ distribution: "Coupon" });
		const first = await admin("POST", `/apps/${appid}/campaigns/${campaignid}/coupons`, {
			coupons: [{ coupon: "SAVE10-A", couponname: "10% off" }, { coupon: "SAVE10-B" }],
		});
		expect(first.status).toBe(201);
		expect(first.body).toEqual({ added: 2, skipped: 0, couponsavailable: 2 });
		const again = await admin("POST", `/apps/${appid}/campaigns/${campaignid}/coupons`, {
			coupons: [{ coupon: "SAVE10-B" }, { coupon: "SAVE10-C" }],
		});
		expect(again.body).toEqual({ added: 1, skipped: 1, couponsavailable: 3 });
		expect((await admin("POST", `/apps/${appid}/campaigns/${campaignid}/coupons`, { coupons: [] })).status).toBe(400);
	});
});
