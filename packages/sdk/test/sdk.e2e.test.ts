import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_APP, DEMO_CAMPAIGN } from "../../../scripts/demo-app.mjs";
import { startService } from "../../../scripts/dev-service.mjs";
import { waitFor } from "../../../test/e2e/wait";
import { startReceiver } from "../../../test/outbox/receiver.mjs";
import type * as Sdk from "../src/index";

// The SDK as an integrator gets it: `npm pack` (its prepack builds it, types
// generated from the OpenAPI document), installed in an empty folder, then
// the README's flow through it against `wrangler dev`.

const SDK_DIR = new URL("..", import.meta.url).pathname;
let sdk: typeof Sdk;
let service: Awaited<ReturnType<typeof startService>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let app: Record<string, any>;
let campaignid: string;

function run(command: string, args: string[], cwd: string) {
	const result = spawnSync(command, args, {
		cwd,
		encoding: "utf8",
		env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false" },
	});
	if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
	return result.stdout;
}

async function admin(method: string, path: string, body?: unknown) {
	const res = await fetch(`${service.base}/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	expect(res.status).toBe(201);
	return (await res.json()) as Record<string, any>;
}

const client = (options: Partial<Sdk.ClientOptions> = {}) =>
	new sdk.ReferralClient({ baseUrl: service.base, apikey: app.apikey, privatekey: app.privatekey, ...options });

beforeAll(async () => {
	const packed = mkdtempSync(join(tmpdir(), "sdk-pack-"));
	run("npm", ["pack", "--pack-destination", packed], SDK_DIR);
	const tarball = readdirSync(packed).find((f) => f.endsWith(".tgz"));
	if (!tarball) throw new Error("npm pack made no tarball");
	const project = mkdtempSync(join(tmpdir(), "sdk-user-"));
	writeFileSync(join(project, "package.json"), JSON.stringify({ name: "integrator", private: true, type: "module" }));
	run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(packed, tarball)], project);
	writeFileSync(join(project, "entry.mjs"), 'export * from "@referral-rewards/sdk";\n');
	sdk = await import(pathToFileURL(join(project, "entry.mjs")).href);
	[service, receiver] = await Promise.all([startService({ name: "sdk" }), startReceiver()]);
	app = await admin("POST", "/apps", { ...DEMO_APP, webhookurl: `${receiver.url}/hooks/sdk` });
	campaignid = String((await admin("POST", `/apps/${app.appid}/campaigns`, DEMO_CAMPAIGN)).campaignid);
}, 240_000);

afterAll(async () => {
	await Promise.all([service?.stop(), receiver?.close()]);
});

describe("the packed SDK against wrangler dev", () => {
	it("installs as a package with no dependencies, ESM with types", () => {
		const manifest = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8"));
		expect(manifest.dependencies ?? {}).toEqual({});
		expect(typeof sdk.ReferralClient).toBe("function");
		expect(typeof sdk.verifyWebhook).toBe("function");
	});

	it("runs the README's flow, texts as typed", async () => {
		const referrals = client();
		const campaign = await referrals.getCampaignData({ campaignid });
		expect(campaign.offertitle).toBe("Give $10, get $10");
		expect((await referrals.campaignTerms({ campaignid })).message).toBe(DEMO_CAMPAIGN.terms);

		const ann = await referrals.register({ email: "ann@example.com", name: "C++ Dev 100%", useraccountid: "42", isexistinguser: false });
		const bob = await referrals.register({ email: "bob+tag@example.com", referrercode: ann.referralcode });
		expect(bob.hasreferrer).toBe(true);
		await referrals.updateUser({ userkey: ann.userkey, phone: "5551234", city: "Saint-Étienne & Co" });
		expect((await referrals.validateReferrerCode({ referrercode: ann.referralcode })).name).toBe("C++ Dev 100%");
		const cy = await referrals.register({ email: "cy@example.com" });
		await referrals.applyReferrerCode({ userkey: cy.userkey, referrercode: ann.referralcode });

		const signup = await referrals.registerConversionEvent({
			userkey: bob.userkey,
			eventname: "Signup",
			customid: "1001",
			growthhack: "SaaS_Referrals",
			extrainfo: "order=42&note=1+1",
		});
		expect(signup.duplicate).toBe(false);
		const order = {
			userkey: bob.userkey,
			eventname: "Transaction",
			transactionvalue: "80",
			customid: "ord_8f3a-77",
			growthhack: "SaaS_Referrals",
		};
		expect((await referrals.registerConversionEvent(order)).duplicate).toBe(false);
		expect((await referrals.registerConversionEvent(order)).duplicate).toBe(true);

		const balance = await referrals.getUserBalance({ userkey: ann.userkey, campaignid, growthhack: "SaaS_Referrals" });
		expect(balance.userbalance[0]).toMatchObject({ rewardunit: "USD", total: 14, approved: 14 });
		const friends = await referrals.getFriendsAndRewards({ userkey: ann.userkey, pageindex: 1, pagesize: 50 });
		expect(friends.totalfriends).toBe(2);
		expect(friends.friends.map((f) => f.email).sort()).toEqual(["bob+tag@example.com", "cy@example.com"]);
		expect((await referrals.redeemRewards({ userkey: ann.userkey, amount: "5" })).redeemed).toBe(5);
		expect((await referrals.redeemRewards({ userkey: ann.userkey, rewarddtlids: [`${ann.userkey}-2`] })).redeemed).toBe(4);
		await referrals.changeRewardStatus({
			rewardslist: [{ rewarddtlid: `${bob.userkey}-1`, rewardstatus: "Under Review", message: "checking 100%" }],
		});
		const status = await referrals.checkRewardStatus({ rewarddtlid: `${bob.userkey}-1` });
		expect(status).toMatchObject({ rewardstatus: "UnderReview", comment: "checking 100%" });
		const reversal = await referrals.reverseConversionEvent({ customid: "ord_8f3a-77", refundvalue: "20", reason: "Partial refund" });
		expect(reversal).toMatchObject({ customid: "ord_8f3a-77", refundvalue: 20 });
		expect((await referrals.invokeOutreach({ email: "ann@example.com", name: "C++ Dev 100%" })).statuscode).toBe(1);
		await referrals.remindFriend({ userkey: ann.userkey, friendemail: "bob+tag@example.com", messageforfriend: "Still time: 100% + more" });
		expect((await referrals.getSharePage({ userkey: ann.userkey })).url).toMatch(/^http/);
	});

	it("retries a 429 after its Retry-After with the same Idempotency-Key: one event, the first answer replayed", async () => {
		const friend = await client().register({
			email: "dee@example.com",
			referrercode: (await client().register({ email: "eve@example.com" })).referralcode,
		});
		const attempts: { key: string | null; at: number; replayed: string | null }[] = [];
		// A proxy in front of the service that loses the first answer and says 429 instead: the event was recorded.
		const proxied: typeof fetch = async (input, init) => {
			const res = await fetch(input, init);
			const key = new Headers(init?.headers).get("idempotency-key");
			attempts.push({ key, at: Date.now(), replayed: res.headers.get("idempotent-replayed") });
			if (attempts.length > 1) return res;
			return new Response(JSON.stringify({ success: false, message: "Slow down", errorcode: "rate_limited" }), {
				status: 429,
				headers: { "content-type": "application/json", "retry-after": "1" },
			});
		};
		const event = { userkey: friend.userkey, eventname: "Signup", customid: "evt-429", growthhack: "SaaS_Referrals" };
		const answer = await client({ fetch: proxied }).registerConversionEvent(event);
		expect(answer.duplicate).toBe(false);
		expect(attempts).toHaveLength(2);
		expect(attempts[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
		expect(attempts[1]?.key).toBe(attempts[0]?.key);
		expect(attempts[1]?.replayed).toBe("true");
		expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1000);
		expect((await client().registerConversionEvent(event)).duplicate).toBe(true);
	});

	it("throws ReferralError with the errorcode, the status and the field errors", async () => {
		const referrals = client();
		const unknown = await referrals.applyReferrerCode({ userkey: "u0000000000000000000", referrercode: "NOPE2345" }).catch((e) => e);
		expect(unknown).toBeInstanceOf(sdk.ReferralError);
		expect(unknown).toMatchObject({ status: 404, retryable: false });
		expect(["user_not_found", "referrer_code_not_found"]).toContain(unknown.errorcode);
		const bad = await referrals
			.registerConversionEvent({
				userkey: "u0000000000000000000",
				eventname: "Signup",
				customid: "x".repeat(101),
				growthhack: "SaaS_Referrals",
			})
			.catch((e) => e);
		expect(bad).toMatchObject({ name: "ReferralError", status: 400, errorcode: "validation_failed" });
		expect(bad.errors).toContainEqual(expect.objectContaining({ field: "customid" }));
		const wrongKey = await new sdk.ReferralClient({ baseUrl: service.base, apikey: app.apikey, privatekey: "pk_wrong" })
			.getCampaignData({ campaignid })
			.catch((e) => e);
		expect(wrongKey).toMatchObject({ status: 401, errorcode: "invalid_credentials" });
	});

	it("verifies a real webhook delivery, and refuses a tampered one", async () => {
		const delivery = await waitFor("a webhook at the receiver", async () => receiver.received("sdk")[0] as any);
		const event = await sdk.verifyWebhook(app.webhooksecret, delivery.headers, delivery.body);
		expect(event.type).toBe(JSON.parse(delivery.body).type);
		await expect(sdk.verifyWebhook(app.webhooksecret, delivery.headers, delivery.body.replace("}", ',"x":1}'))).rejects.toThrow(
			/no matching signature/,
		);
		await expect(sdk.verifyWebhook(app.webhooksecret, delivery.headers, delivery.body, new Date(Date.now() + 3_600_000))).rejects.toThrow(
			/timestamp/,
		);
	});

	it("has the types of the served /openapi.json (the build's generated types do not drift)", async () => {
		const served = await (await fetch(`${service.base}/openapi.json`)).text();
		const dir = mkdtempSync(join(tmpdir(), "sdk-types-"));
		writeFileSync(join(dir, "openapi.json"), served);
		const bin = join(SDK_DIR, "../../node_modules/.bin/openapi-typescript");
		run(bin, [join(dir, "openapi.json"), "-o", join(dir, "openapi.ts")], dir);
		expect(readFileSync(join(dir, "openapi.ts"), "utf8")).toBe(readFileSync(join(SDK_DIR, "src/openapi.ts"), "utf8"));
	});
});
