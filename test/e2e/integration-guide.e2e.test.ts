import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";

// docs/integration.md's JavaScript, run as written against `wrangler dev`:
// the helper, the set-up, registration, events with retries, balances and
// redemption. Only what the guide leaves to the product (its web framework,
// its database, the signed-in user) is stubbed around the snippets.

let service: Awaited<ReturnType<typeof startService>>;

beforeAll(async () => {
	service = await startService({ name: "guide" });
});

afterAll(async () => {
	await service?.stop();
});

/** The guide's ```js blocks, in order. */
function guideBlocks(): string[] {
	const guide = readFileSync(new URL("../../docs/integration.md", import.meta.url), "utf8");
	return [...guide.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

/** The one block that contains `marker` (so a reordered guide still finds its snippets; a removed one fails here). */
function block(blocks: string[], marker: string): string {
	const found = blocks.filter((b) => b.includes(marker));
	expect(found, `exactly one guide block with ${marker}`).toHaveLength(1);
	return found[0]!;
}

async function runModule(dir: string, name: string, source: string): Promise<Record<string, any>> {
	const file = join(dir, name);
	writeFileSync(file, source);
	return import(pathToFileURL(file).href);
}

describe("docs/integration.md", () => {
	it("its snippets run as written: set-up, sign-ups with a code, an order, the wallet and a redemption", async () => {
		const blocks = guideBlocks();
		const dir = mkdtempSync(join(tmpdir(), "guide-"));
		process.env.REFERRALS_URL = service.base;
		process.env.ADMIN_TOKEN = service.adminToken;
		// Set-up (once): the app and its campaign.
		const setup = await runModule(
			dir,
			"setup.mjs",
			`const BASE = process.env.REFERRALS_URL;\n${block(blocks, 'admin("POST", "/apps"')}\nexport { app, campaignid };\n`,
		);
		expect(setup.app.appid).toMatch(/^app_/);
		process.env.REFERRALS_APIKEY = setup.app.apikey;
		process.env.REFERRALS_PRIVATEKEY = setup.app.privatekey;

		// The product's side the guide assumes: its users table, a request with the referral cookie, an order.
		const flow = `${block(blocks, "export async function call(")}
const db = { users: { rows: new Map(), async update(id, fields) { this.rows.set(id, { ...this.rows.get(id), ...fields }); } } };
${block(blocks, "async function onSignup(")}
${block(blocks, "async function withRetries(")}
await onSignup({ cookies: {} }, { id: 1, email: "ann@example.com", name: "Ann" });
const ann = db.users.rows.get(1);
await onSignup({ cookies: { referrercode: ann.referralCode } }, { id: 2, email: "bob@example.com", name: "Bob" });
await onSignup({ cookies: { referrercode: "NO-SUCH-CODE" } }, { id: 3, email: "cy@example.com", name: "Cy" });
await onOrderPaid({ id: 501, total: 80, customer: { referralUserkey: db.users.rows.get(2).referralUserkey } });
await onOrderPaid({ id: 501, total: 80, customer: { referralUserkey: db.users.rows.get(2).referralUserkey } });
const userkey = ann.referralUserkey;
${block(blocks, 'call("getuserbalance"')}
export const redeemed = await applyCredit({ id: 900, total: 12 }, userkey);
export const again = await applyCredit({ id: 900, total: 12 }, userkey);
export const before = usd;
export const users = db.users.rows;
`;
		const result = await runModule(dir, "flow.mjs", flow);
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
	});
});
