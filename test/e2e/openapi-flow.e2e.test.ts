import { mkdirSync, writeFileSync } from "node:fs";
import SwaggerParser from "@apidevtools/swagger-parser";
import createClient from "openapi-fetch";
import openapiTS, { astToString } from "openapi-typescript";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { startReceiver } from "../outbox/receiver.mjs";
// Generated in beforeAll from the served document (test/e2e/.generated is git-ignored).
import type { paths } from "./.generated/openapi";
import { contractChecker } from "./contract";
import { waitFor as waitUntil } from "./wait";

// The integration flow of docs/integration.md through a client typed from the
// document the service serves, against `wrangler dev`. Every response, success
// or error, is checked against that document: if it lies, this fails.

let service: Awaited<ReturnType<typeof startService>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let doc: any;

beforeAll(async () => {
	receiver = await startReceiver();
	service = await startService({ name: "openapi", vars: { WEBHOOK_TIMEOUT_MS: "3000" } });
	doc = await (await fetch(`${service.base}/openapi.json`)).json();
	const generated = new URL("./.generated/", import.meta.url);
	mkdirSync(generated, { recursive: true });
	writeFileSync(new URL("openapi.d.ts", generated), astToString(await openapiTS(structuredClone(doc))));
});

afterAll(async () => {
	await service?.stop();
	await receiver?.close();
});

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000) =>
	waitUntil(what, probe, { timeoutMs, context: () => service.logs().slice(-3000) });

describe("static assets and the Worker (wrangler.toml's run_worker_first)", () => {
	it("serves the two asset files from the assets, and every other path from the Worker without asking them first", async () => {
		for (const [path, cache] of [
			["/docs/scalar.js", "public, max-age=86400"],
			["/dashboard/static/webauthn.js", "public, max-age=300"],
		] as const) {
			const res = await fetch(`${service.base}${path}`);
			expect(res.status, path).toBe(200);
			// public/_headers applies to assets only: the header shows the asset layer answered.
			expect(res.headers.get("cache-control"), path).toBe(cache);
			expect(res.headers.get("content-type"), path).toMatch(/javascript/);
			await res.arrayBuffer();
		}
		// Files of the same folders the Worker serves, and a path no asset has: the Worker's own answers.
		const init = await fetch(`${service.base}/docs/init.js`);
		expect(init.status).toBe(200);
		expect(await init.text()).toContain("Scalar");
		for (const path of ["/dashboard/static/passkeys.js", "/dashboard/static/app.js"]) {
			const res = await fetch(`${service.base}${path}`);
			expect(res.status, path).toBe(200);
			await res.arrayBuffer();
		}
		const missing = await fetch(`${service.base}/no/such/page`);
		expect(missing.status).toBe(404);
		expect(await missing.json()).toMatchObject({ success: false });
	});
});

describe("the served OpenAPI document", () => {
	it("is valid OpenAPI 3.1 for an independent validator (@apidevtools/swagger-parser)", async () => {
		const api = (await SwaggerParser.validate(structuredClone(doc))) as any;
		expect(api.openapi).toBe("3.1.0");
		expect(Object.keys(api.paths).filter((p) => p.startsWith("/saas/v1_0/")).length).toBeGreaterThanOrEqual(15);
	});

	it("is rejected by the same validator when broken, so the check above can fail", async () => {
		const broken = structuredClone(doc);
		broken.paths["/saas/v1_0/register"].post.responses = "nope";
		await expect(SwaggerParser.validate(broken)).rejects.toThrow();
	});

	it("makes the contract check fail when a response shape is wrong in it", () => {
		const lying = structuredClone(doc);
		delete lying.paths["/saas/v1_0/registerconversionevent"].post.responses["200"].content["application/json"].schema.properties.duplicate;
		const honest = contractChecker(doc);
		const liar = contractChecker(lying);
		const body = { success: true, message: "Conversion recorded; 1 reward(s) created.", duplicate: false, rewardscreated: 1 };
		honest.check("/saas/v1_0/registerconversionevent", "post", 200, body);
		expect(() => liar.check("/saas/v1_0/registerconversionevent", "post", 200, body)).toThrow(/does not match the document/);
		expect(() => honest.check("/saas/v1_0/register", "post", 418, {})).toThrow(/does not list/);
	});
});

describe("integration flow through openapi-fetch (typed from the served document)", () => {
	it("runs from app set-up to redemption, every response matching the document", async () => {
		const contract = contractChecker(doc);
		const client = createClient<paths>({ baseUrl: service.base });
		client.use(contract.middleware);
		const adminHeaders = { authorization: `Bearer ${service.adminToken}` };

		// Set-up (admin API): an app whose webhooks reach our receiver, and a campaign.
		const created = await client.POST("/admin/v1/apps", {
			headers: adminHeaders,
			body: { name: "Flow shop", landingurl: "https://shop.example.com/join", webhookurl: `${receiver.url}/hooks/flow` },
		});
		const app = created.data!;
		const campaign = await client.POST("/admin/v1/apps/{appid}/campaigns", {
			headers: adminHeaders,
			params: { path: { appid: app.appid } },
			body: {
				campaignname: "Give $10, get $10",
				offertitle: "Give $10, get $10",
				rewardrules: [
					{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
					{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" },
				],
				socialactions: [{ socialactionid: "5", socialactionname: "Mail", sharemessage: "Join me: SHARE_URL" }],
			} as any,
		});
		expect(campaign.response.status).toBe(201);
		const auth = { apikey: app.apikey, privatekey: app.privatekey };
		const campaignid = String(campaign.data!.campaignid);

		const data = await client.POST("/saas/v1_0/getcampaigndata", { body: { ...auth, campaignid } });
		expect(data.data!.offertitle).toBe("Give+%2410%2C+get+%2410");
		await client.POST("/saas/v1_0/campaignterms", { body: { ...auth, campaignid } });

		// 1-2. The referrer registers and shares; the friend arrives with referrercode and registers with it.
		const ann = (
			await client.POST("/saas/v1_0/register", {
				headers: { "Idempotency-Key": crypto.randomUUID() },
				body: { ...auth, email: "ann@example.org", name: "Ann" },
			})
		).data!;
		const click = await fetch(ann.shareurl.replace(/^https?:\/\/[^/]+/, service.base), { redirect: "manual" });
		const landing = new URL(click.headers.get("location")!);
		expect(landing.searchParams.get("referrercode")).toBe(ann.referralcode);
		const valid = await client.POST("/saas/v1_0/validatereferrercode", { body: { ...auth, referrercode: ann.referralcode } });
		expect(valid.data!.name).toBe("Ann");
		const bob = (
			await client.POST("/saas/v1_0/register", {
				headers: { "Idempotency-Key": crypto.randomUUID() },
				body: { ...auth, email: "bob@example.org", referrercode: landing.searchParams.get("referrercode")! },
			})
		).data!;
		expect(bob.hasreferrer).toBe(true);
		await client.POST("/saas/v1_0/updateuser", { body: { ...auth, userkey: bob.userkey, city: "Paris" } });
		const again = await client.POST("/saas/v1_0/applyreferrercode", {
			body: { ...auth, userkey: bob.userkey, referrercode: ann.referralcode },
		});
		expect(again.error).toMatchObject({ success: false, errorcode: "referrer_already_set" });

		// 3. The referral page.
		const page = (await client.POST("/saas/v1_0/getsharepage", { body: { ...auth, userkey: ann.userkey } })).data!;
		const html = await (await fetch(page.url)).text();
		expect(html).toContain(ann.referralcode);

		// 4. Events: Signup, then a purchase; a retry with the same customid is a duplicate.
		const signup = await client.POST("/saas/v1_0/registerconversionevent", {
			body: { ...auth, userkey: bob.userkey, eventname: "Signup", customid: "1001", growthhack: "SaaS_Referrals" },
		});
		expect(signup.data!.duplicate).toBe(false);
		const purchase = {
			...auth,
			userkey: bob.userkey,
			eventname: "Transaction",
			transactionvalue: "80",
			customid: "1002",
			growthhack: "SaaS_Referrals",
		};
		expect((await client.POST("/saas/v1_0/registerconversionevent", { body: purchase })).data!.duplicate).toBe(false);
		expect((await client.POST("/saas/v1_0/registerconversionevent", { body: purchase })).data!.duplicate).toBe(true);

		// 5. The signed webhook.
		const delivery = await waitFor("conversion.recorded", async () => {
			const got = (await (await fetch(`${receiver.url}/__received/flow`)).json()) as any[];
			return got.find((r) => JSON.parse(r.body).type === "conversion.recorded");
		});
		const event = new Webhook(app.webhooksecret).verify(delivery.body, delivery.headers) as any;
		expect(event.data.userkey).toBe(bob.userkey);

		// 6. Balances, friends, statuses and redemption.
		const balance = await client.POST("/saas/v1_0/getuserbalance", { body: { ...auth, userkey: ann.userkey, campaignid } });
		expect(balance.data!.userbalance[0]).toMatchObject({ rewardunit: "USD", total: 18, approved: 18 });
		const friends = await client.POST("/saas/v1_0/getfriendsandrewards", { body: { ...auth, userkey: ann.userkey } });
		expect(friends.data!).toMatchObject({ totalfriends: 1, convertedfriends: 1 });
		const earned = friends.data!.friends[0]!.earnedrewards;
		expect(earned).toHaveLength(2);
		// The purchase's reward (8, 10 % of 80) goes under review, leaving the signup's 10 to redeem.
		const purchaseReward = earned.find((r) => r.reward === "8")!.rewarddtlid;
		await client.POST("/saas/v1_0/changerewardstatus", {
			body: { ...auth, rewardslist: [{ rewarddtlid: purchaseReward, rewardstatus: "Under Review", message: "checking" }] },
		});
		const status = await client.POST("/saas/v1_0/checkrewardstatus", { body: { ...auth, rewarddtlid: purchaseReward } });
		expect(status.data!).toMatchObject({ rewardstatus: "UnderReview", comment: "checking" });
		const tooMuch = await client.POST("/saas/v1_0/redeemrewards", { body: { ...auth, userkey: ann.userkey, amount: "11" } });
		expect(tooMuch.error).toMatchObject({ errorcode: "insufficient_balance" });
		const redeemed = await client.POST("/saas/v1_0/redeemrewards", {
			headers: { "Idempotency-Key": crypto.randomUUID() },
			body: { ...auth, userkey: ann.userkey, amount: "10" },
		});
		expect(redeemed.data!.redeemed).toBe(10);

		// 7. A refund of half the purchase: its percent reward shrinks by half.
		const refund = await client.POST("/saas/v1_0/reverseconversionevent", {
			headers: { "Idempotency-Key": crypto.randomUUID() },
			body: { ...auth, customid: "1002", refundvalue: "40", reason: "partial refund" },
		});
		expect(refund.data!).toMatchObject({ customid: "1002", full: false, duplicate: false });

		// Messages.
		await client.POST("/saas/v1_0/invokeoutreach", { body: { ...auth, userkey: ann.userkey } });
		await client.POST("/saas/v1_0/remindfriend", { body: { ...auth, userkey: ann.userkey, frienduserkey: bob.userkey } });
		const limited = await client.POST("/saas/v1_0/remindfriend", { body: { ...auth, userkey: ann.userkey, frienduserkey: bob.userkey } });
		expect(limited.error).toMatchObject({ errorcode: "rate_limited" });

		// The campaign's leaderboard (its counters follow the ledgers' flush: checked against the document, not for Ann's rank).
		const board = await client.POST("/saas/v1_0/getleaderboard", { body: { ...auth, campaignid, userkey: ann.userkey } });
		expect(board.response.status).toBe(200);
		expect(board.data!.leaderboard).toEqual(expect.any(Array));

		// Errors are the documented envelope too.
		const unknown = await client.POST("/saas/v1_0/getuserbalance", { body: { ...auth, userkey: "nobody", campaignid } });
		expect(unknown.response.status).toBe(404);
		const wrongKey = await client.POST("/saas/v1_0/getcampaigndata", { body: { apikey: app.apikey, privatekey: "pk_wrong", campaignid } });
		expect(wrongKey.response.status).toBe(401);

		// Admin reads.
		await client.GET("/admin/v1/apps/{appid}", { headers: adminHeaders, params: { path: { appid: app.appid } } });
		await client.PATCH("/admin/v1/apps/{appid}", {
			headers: adminHeaders,
			params: { path: { appid: app.appid } },
			body: { frameorigin: "https://app.example.org" },
		});
		await client.GET("/admin/v1/apps/{appid}/campaigns/{campaignid}", {
			headers: adminHeaders,
			params: { path: { appid: app.appid, campaignid } },
		});
		await client.GET("/admin/v1/apps/{appid}/users", {
			headers: adminHeaders,
			params: { path: { appid: app.appid }, query: { q: "ann" } },
		});
		await client.GET("/admin/v1/apps/{appid}/rewards", { headers: adminHeaders, params: { path: { appid: app.appid } } });
		await client.GET("/admin/v1/apps/{appid}/stats", { headers: adminHeaders, params: { path: { appid: app.appid } } });
		await client.GET("/admin/v1/apps/{appid}/deliveries", {
			headers: adminHeaders,
			params: { path: { appid: app.appid }, query: { limit: 10 } },
		});

		// Every public operation went through the contract check at least once.
		const publicChecked = new Set(contract.checked.filter((k) => k.includes("/saas/v1_0/")).map((k) => k.split(" ")[1]));
		const documented = Object.keys(doc.paths).filter((p) => p.startsWith("/saas/v1_0/"));
		expect([...documented].filter((p) => !publicChecked.has(p))).toEqual([]);
	});
});
