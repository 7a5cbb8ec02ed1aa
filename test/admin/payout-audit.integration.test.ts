import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";

/**
 * Issue 31: a payout retry and a personal-data export are in the audit log
 * with the actor who asked; erasure leaves no Stripe customer id in any
 * reward comment (older code kept Stripe's text, "No such customer: 'cus_...'").
 */

type Entry = { action: string; actor: string; actortype: string; targettype: string; targetid: string | null };
const auditOf = async (appid: string) => (await admin<{ entries: Entry[] }>("GET", `/apps/${appid}/audit`)).body.entries;

async function stripeReferrer() {
	const app = await createApp({
		distribution: "Stripe",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "USD" }],
	});
	const referrer = (await app.api("register", { email: "pa.ref@example.com", paymentcustomerid: "cus_PaRef123" })).body;
	const friend = (await app.api("register", { email: "pa.fr@example.com", referrercode: referrer.referralcode })).body;
	const converted = await app.api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Transaction",
		customid: "31001",
		growthhack: "SaaS_Referrals",
	});
	expect(converted.status).toBe(200);
	return { app, userkey: referrer.userkey as string };
}

describe("audit and erasure of payouts", () => {
	it("a payout retry is in the audit log with its actor", async () => {
		const { app, userkey } = await stripeReferrer();
		const retried = await admin("POST", `/apps/${app.appid}/users/${userkey}/payouts/retry`);
		expect(retried.status).toBe(202);
		const entry = (await auditOf(app.appid)).find((e) => e.action === "payout.retry");
		expect(entry).toMatchObject({ actortype: "superuser", targettype: "user", targetid: userkey });
	});

	it("an export is in the audit log with its actor", async () => {
		const { app, userkey } = await stripeReferrer();
		expect((await admin("GET", `/apps/${app.appid}/users/${userkey}/export`)).status).toBe(200);
		const entry = (await auditOf(app.appid)).find((e) => e.action === "user.export");
		expect(entry).toMatchObject({ actortype: "superuser", targettype: "user", targetid: userkey });
	});

	it("erasure leaves no customer id in any comment", async () => {
		const { app, userkey } = await stripeReferrer();
		const ledger = ledgerFor(env, app.appid, userkey);
		await ledger.flush();
		await runInDurableObject(ledger, async (_instance, state) => {
			state.storage.sql.exec("UPDATE rewards SET comment = ? WHERE seq = 1", "Stripe refused the payout: No such customer: 'cus_PaRef123'");
		});
		expect((await admin("DELETE", `/apps/${app.appid}/users/${userkey}`)).status).toBe(200);
		await ledger.flush();
		const comments = await runInDurableObject(ledger, async (_instance, state) =>
			state.storage.sql.exec<{ comment: string | null }>("SELECT comment FROM rewards").toArray(),
		);
		expect(comments.length).toBeGreaterThan(0);
		expect(JSON.stringify(comments)).not.toContain("cus_");
		const projected = await env.DB.prepare("SELECT comment FROM rewards WHERE appid = ? AND userkey = ?").bind(app.appid, userkey).all();
		expect(JSON.stringify(projected.results)).not.toContain("cus_");
	});
});
