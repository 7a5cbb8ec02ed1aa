import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, request } from "../support/api";

/**
 * The audit log (issue 22): every admin change and every money decision of
 * the public API has its entry, with who, what, before and after; an entry
 * that cannot be written stops its change; entries are never updated.
 */

type Entry = {
	action: string;
	actor: string;
	actortype: string;
	targettype: string;
	targetid: string | null;
	changes: Record<string, any>;
};
let nextCustomId = 9_100_000;

const auditOf = async (appid: string, query = "") => {
	const res = await admin<{ entries: Entry[]; nextcursor: string | null }>("GET", `/apps/${appid}/audit${query}`);
	expect(res.status).toBe(200);
	return res.body;
};

async function withToken(appid: string, role: string, name = `${role}-bot`) {
	const token = (await admin("POST", `/apps/${appid}/tokens`, { name, role })).body.token as string;
	return (method: string, path: string, body?: unknown) =>
		request(`/admin/v1${path}`, {
			method,
			headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "cf-connecting-ip": "198.51.100.7" },
			...(body === undefined ? {} : { body: JSON.stringify(body) }),
		});
}

/** A referrer with one approved $10 reward from a friend's signup. */
async function referrerWithReward() {
	const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }] });
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "fr@x.com", referrercode: referrer.referralcode })).body;
	const customid = String(nextCustomId++);
	await app.api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Signup",
		customid,
		transactionvalue: 100,
		growthhack: "SaaS_Referrals",
	});
	const ledger = ledgerFor(env, app.appid, referrer.userkey);
	const [reward] = await ledger.listRewards();
	return { ...app, referrer, friend, customid, ledger, rewardid: reward!.rewarddtlid };
}

const dropFailingTrigger = () => env.DB.prepare("DROP TRIGGER IF EXISTS audit_down").run();
afterEach(dropFailingTrigger);

describe("audit log", () => {
	it("records an app change by a token with the fields before and after and the client's network hash, never a secret", async () => {
		const app = await createApp();
		const owner = await withToken(app.appid, "owner", "ops-owner");
		expect((await owner("PATCH", `/apps/${app.appid}`, { name: "Renamed", timezone: "Europe/Paris" })).status).toBe(200);
		expect((await owner("POST", `/apps/${app.appid}/rotate-webhooksecret`)).status).toBe(200);
		const { entries } = await auditOf(app.appid);
		const [rotation, update] = entries;
		expect(update).toMatchObject({
			action: "app.update",
			actor: "ops-owner",
			actortype: "token",
			targettype: "app",
			targetid: app.appid,
			changes: { name: { before: "Test app", after: "Renamed" }, timezone: { before: "UTC", after: "Europe/Paris" } },
		});
		expect(rotation).toMatchObject({
			action: "app.rotate_webhooksecret",
			changes: { webhooksecret: { before: "(secret)", after: "(secret)" } },
		});
		expect(JSON.stringify(entries)).not.toContain("whsec_");
		const stored = await env.DB.prepare("SELECT iphash FROM audit_log WHERE appid = ? AND action = 'app.update'").bind(app.appid).first();
		expect(stored?.iphash).toMatch(/^[0-9a-f]{64}$/);
	});

	it("records campaign creation with the id the batch made, and an edit's before and after", async () => {
		const app = await createApp();
		const manager = await withToken(app.appid, "manager", "campaign-bot");
		const patched = await manager("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { campaignname: "Spring" });
		expect(patched.status).toBe(200);
		const { entries } = await auditOf(app.appid, "?action=campaign.update");
		expect(entries).toHaveLength(1);
		expect(entries[0]).toMatchObject({
			actor: "campaign-bot",
			targetid: String(app.campaignid),
			changes: { campaignname: { after: "Spring" } },
		});
		const created = await auditOf(app.appid, "?action=campaign.create");
		expect(created.entries[0]).toMatchObject({ actor: "superuser", actortype: "superuser", targetid: String(app.campaignid) });
	});

	it("a change whose entry cannot be written is not made: app settings, campaigns, members, tokens", async () => {
		const app = await createApp();
		await env.DB.prepare("CREATE TRIGGER audit_down BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit log down'); END").run();
		expect((await admin("PATCH", `/apps/${app.appid}`, { name: "Never" })).status).toBe(500);
		expect((await admin("POST", `/apps/${app.appid}/campaigns`, { campaignname: "Never", rewardrules: [] })).status).toBeGreaterThanOrEqual(
			400,
		);
		expect((await admin("POST", `/apps/${app.appid}/members`, { email: "never@example.com", role: "viewer" })).status).toBe(500);
		expect((await admin("POST", `/apps/${app.appid}/tokens`, { name: "never", role: "viewer" })).status).toBe(500);
		await dropFailingTrigger();
		expect((await admin("GET", `/apps/${app.appid}`)).body.name).toBe("Test app");
		expect((await admin("GET", `/apps/${app.appid}/campaigns`)).body.campaigns).toHaveLength(1);
		expect((await admin("GET", `/apps/${app.appid}/members`)).body.members).toEqual([]);
		expect((await admin("GET", `/apps/${app.appid}/tokens`)).body.tokens).toEqual([]);
		const person = await env.DB.prepare("SELECT 1 FROM people WHERE email = 'never@example.com'").first();
		expect(person).toBeNull();
	});

	it("records the public API's money decisions under the app key: status change, reversal, redemption", async () => {
		const { appid, apikey, api, referrer, customid, ledger, rewardid } = await referrerWithReward();
		expect(
			(await api("changerewardstatus", { rewardslist: [{ rewarddtlid: rewardid, rewardstatus: "UnderReview", message: "check" }] })).status,
		).toBe(200);
		expect((await api("changerewardstatus", { rewardslist: [{ rewarddtlid: rewardid, rewardstatus: "Approved" }] })).status).toBe(200);
		expect((await api("redeemrewards", { userkey: referrer.userkey, amount: 4 })).status).toBe(200);
		expect((await api("reverseconversionevent", { customid, reason: "refunded" })).status).toBe(200);
		await ledger.flush();
		const { entries } = await auditOf(appid);
		const byAction = (action: string) => entries.filter((e) => e.action === action);
		const money = entries.filter((e) => e.action.startsWith("reward.") || e.action.startsWith("balance."));
		expect(money.map((e) => e.action)).toEqual(["reward.reverse", "balance.redeem", "reward.status", "reward.status"]);
		expect(money.every((e) => e.actor === apikey && e.actortype === "appkey")).toBe(true);
		expect(byAction("reward.status").map((e) => e.changes.rewardstatus)).toEqual([
			{ before: "UnderReview", after: "Approved" },
			{ before: "Approved", after: "UnderReview" },
		]);
		expect(byAction("balance.redeem")[0]).toMatchObject({
			targettype: "user",
			targetid: referrer.userkey,
			changes: { redeemed: { after: 4 } },
		});
		expect(byAction("reward.reverse")[0]).toMatchObject({
			targetid: rewardid,
			changes: { reward: { before: "10", after: "0" }, comment: { after: "refunded" } },
		});
	});

	it("a reviewer's approval names the reviewer; filters and pages; the log refuses updates", async () => {
		const { appid, rewardid, ledger } = await referrerWithReward();
		const reviewer = await withToken(appid, "reviewer", "review-bot");
		for (const status of ["Suspicious", "Approved", "Rejected"]) {
			const res = await reviewer("POST", `/apps/${appid}/rewards/status`, { changes: [{ rewarddtlid: rewardid, rewardstatus: status }] });
			expect(res.status).toBe(200);
		}
		await ledger.flush();
		const first = await auditOf(appid, `?actor=review-bot&limit=2`);
		expect(first.entries.map((e) => e.changes.rewardstatus.after)).toEqual(["Rejected", "Approved"]);
		const second = await auditOf(appid, `?actor=review-bot&limit=2&cursor=${first.nextcursor}`);
		expect(second.entries.map((e) => e.changes.rewardstatus)).toEqual([{ before: "Approved", after: "Suspicious" }]);
		expect(second.nextcursor).toBeNull();
		const history = await auditOf(appid, `?targettype=reward&targetid=${rewardid}`);
		expect(history.entries).toHaveLength(3);
		expect((await admin("GET", `/apps/${appid}/audit?targettype=reward`)).body.fields).toEqual(["targetid"]);
		expect((await admin("GET", `/apps/${appid}/audit?cursor=nonsense`)).status).toBe(400);
		await expect(env.DB.prepare("UPDATE audit_log SET actor = 'someone else' WHERE appid = ?").bind(appid).run()).rejects.toThrow(
			/never updated/,
		);
	});

	it("a ledger change whose entry D1 refuses keeps its entry in the ledger's outbox until D1 takes it", async () => {
		const { appid, api, rewardid, ledger } = await referrerWithReward();
		await ledger.flush();
		await env.DB.prepare("CREATE TRIGGER audit_down BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit log down'); END").run();
		expect((await api("changerewardstatus", { rewardslist: [{ rewarddtlid: rewardid, rewardstatus: "Rejected" }] })).status).toBe(200);
		await ledger.flush();
		expect((await auditOf(appid, "?action=reward.status")).entries).toEqual([]);
		await dropFailingTrigger();
		// The failed pass postponed the entry (still in the outbox): make it due and flush again.
		await runInDurableObject(ledger, (_instance, state) => {
			const waiting = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox WHERE kind = 'audit'").one().n;
			expect(waiting).toBe(1);
			state.storage.sql.exec("UPDATE outbox SET next_attempt_at = 0");
		});
		await ledger.flush();
		const { entries } = await auditOf(appid, "?action=reward.status");
		expect(entries.map((e) => e.changes.rewardstatus)).toEqual([{ before: "Approved", after: "Rejected" }]);
	});
});
