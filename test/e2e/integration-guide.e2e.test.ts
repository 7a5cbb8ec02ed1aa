import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { block, buildSdk, guideBlocks, moduleOf, runModule } from "./guide-modules";

// docs/integration.md's JavaScript, run as written against `wrangler dev`
// with the SDK: the client, the raw helper, the set-up, registration, an
// order, the wallet and a redemption. Only what the guide leaves to the
// product (its web framework, its database, the signed-in user) is stubbed
// around the snippets.

let service: Awaited<ReturnType<typeof startService>>;

beforeAll(async () => {
	buildSdk();
	service = await startService({ name: "guide" });
});

afterAll(async () => {
	await service?.stop();
});

describe("docs/integration.md", () => {
	it("its snippets run as written: set-up, sign-ups with a code, an order, the wallet and a redemption", async () => {
		const blocks = guideBlocks();
		process.env.REFERRALS_URL = service.base;
		process.env.ADMIN_TOKEN = service.adminToken;
		// Set-up (once): the app and its campaign.
		const setup = await runModule(
			"setup",
			`const BASE = process.env.REFERRALS_URL;\n${block(blocks, 'admin("POST", "/apps"')}\nexport { app, campaignid };\n`,
		);
		expect(setup.app.appid).toMatch(/^app_/);
		process.env.REFERRALS_APIKEY = setup.app.apikey;
		process.env.REFERRALS_PRIVATEKEY = setup.app.privatekey;

		// The product's side the guide assumes: its users table, a request with the referral cookie, an order.
		const flow = `${moduleOf([
			block(blocks, "new ReferralClient("),
			block(blocks, "async function onSignup("),
			block(blocks, "async function onOrderPaid("),
		])}
const db = { users: { rows: new Map(), async update(id, fields) { this.rows.set(id, { ...this.rows.get(id), ...fields }); } } };
await onSignup({ cookies: {} }, { id: 1, email: "ann@example.com", name: "Ann" });
const ann = db.users.rows.get(1);
await onSignup({ cookies: { referrercode: ann.referralCode } }, { id: 2, email: "bob@example.com", name: "Bob" });
await onSignup({ cookies: { referrercode: "NO-SUCH-CODE" } }, { id: 3, email: "cy@example.com", name: "Cy" });
await onOrderPaid({ id: 501, total: 80, customer: { referralUserkey: db.users.rows.get(2).referralUserkey } });
await onOrderPaid({ id: 501, total: 80, customer: { referralUserkey: db.users.rows.get(2).referralUserkey } });
const userkey = ann.referralUserkey;
${block(blocks, "referrals.getUserBalance(")}
export const redeemed = await applyCredit({ id: 900, total: 12 }, userkey);
export const again = await applyCredit({ id: 900, total: 12 }, userkey);
export const before = usd;
export const users = db.users.rows;
`;
		const result = await runModule("flow", flow);
		// Ann: 5 % of Bob's order of 80, recorded once though the order was reported twice (the guide sends no Signup event).
		expect(result.before).toMatchObject({ rewardunit: "USD", approved: 4 });
		expect(result.redeemed).toBe(4);
		expect(result.again).toBe(4); // the same order's key: replayed, not debited twice
		// A stale code did not block Cy's sign-up.
		expect(result.users.get(3).referralUserkey).toMatch(/^u/);
		const balance = await fetch(`${service.base}/saas/v1_0/getuserbalance`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({
				apikey: setup.app.apikey,
				privatekey: setup.app.privatekey,
				userkey: result.users.get(1).referralUserkey,
				campaignid: String(setup.campaignid),
			}),
		}).then((r) => r.json() as Promise<{ userbalance: { approved: number }[] }>);
		expect(balance.userbalance[0]?.approved).toBe(0);

		// The raw helper answers the same, and its errors carry errorcode, requestid and docs.
		const raw = await runModule("raw", block(blocks, "export async function call("));
		const same = await raw.call("getuserbalance", { userkey: result.users.get(1).referralUserkey, campaignid: String(setup.campaignid) });
		expect(same.userbalance).toEqual(balance.userbalance);
		const error = await raw.call("getuserbalance", { userkey: "nobody", campaignid: String(setup.campaignid) }).catch((e: unknown) => e);
		expect(error).toMatchObject({ status: 404, errorcode: "user_not_found", requestid: expect.stringMatching(/^req_/) });
		expect(error.docs).toBe(`${service.base}/docs/api.md#user_not_found`);
	});
});
