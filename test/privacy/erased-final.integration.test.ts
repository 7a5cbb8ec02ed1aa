import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { emailEvent, outboxMessage, webhookEvent } from "../../src/outbox/events";
import { attemptsOf, hookUrl, received, recordEvent, recordedEmail, runBatch, uniqueKey } from "../outbox/support";
import { admin, createApp, request } from "../support/api";

/**
 * Erasure is final (docs/fraud.md, "Erase"): every operation on an erased
 * user answers 410 user_erased and changes nothing, its share page stops,
 * an erased referrer earns nothing new, and messages queued before the
 * erasure are delivered from the redacted record.
 */

let nextCustomId = 93_000;
const customid = () => String(nextCustomId++);
type App = Awaited<ReturnType<typeof createApp>>;
const event = (app: App, userkey: string, eventname = "Signup") =>
	app.api("registerconversionevent", { userkey, eventname, customid: customid(), growthhack: "SaaS_Referrals" });

/** Ann refers Bob, Bob refers Cy; both signups rewarded; then Bob is erased. */
async function erasedBob(appSettings: Record<string, unknown> = {}) {
	const n = crypto.randomUUID().slice(0, 8);
	const app = await createApp({}, appSettings);
	const ann = (await app.api("register", { email: `ann-${n}@example.com`, name: "Ann" })).body;
	const bob = (await app.api("register", { email: `bob-${n}@example.com`, name: `Bob ${n}`, referrercode: ann.referralcode })).body;
	const cy = (await app.api("register", { email: `cy-${n}@example.com`, name: "Cy", referrercode: bob.referralcode })).body;
	expect((await event(app, bob.userkey)).status).toBe(200);
	expect((await event(app, cy.userkey)).status).toBe(200);
	const sharepage = (await app.api("getsharepage", { userkey: bob.userkey })).body.url as string;
	expect((await request(new URL(sharepage).pathname + new URL(sharepage).search)).status).toBe(200);
	const bobLedger = ledgerFor(env, app.appid, bob.userkey);
	const bobRewards = await bobLedger.listRewards();
	expect(bobRewards.length).toBe(2);
	expect((await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`)).status).toBe(200);
	return { app, ann, bob, cy, sharepage, bobLedger, bobRewards, email: `bob-${n}@example.com`, name: `Bob ${n}` };
}

const gone = (res: { status: number; body: Record<string, any> }, what: string) => {
	expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(410);
	expect(res.body, what).toMatchObject({ success: false, errorcode: "user_erased" });
};

describe("an erased user", () => {
	it("is answered 410 user_erased by every operation that names it, and nothing changes", async () => {
		const { app, ann, bob, cy, bobLedger, bobRewards } = await erasedBob();
		const events = () => env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ?").bind(app.appid).first();
		const eventsBefore = await events();
		const [own] = bobRewards;

		gone(await event(app, bob.userkey, "Purchase"), "registerconversionevent");
		gone(await app.api("getsharepage", { userkey: bob.userkey }), "getsharepage");
		gone(await app.api("getuserbalance", { userkey: bob.userkey, campaignid: String(app.campaignid) }), "getuserbalance");
		gone(await app.api("getfriendsandrewards", { userkey: bob.userkey }), "getfriendsandrewards");
		gone(await app.api("redeemrewards", { userkey: bob.userkey, amount: "1" }), "redeemrewards by amount");
		gone(await app.api("redeemrewards", { userkey: bob.userkey, rewarddtlids: [own!.rewarddtlid] }), "redeemrewards by id");
		gone(await app.api("updateuser", { userkey: bob.userkey, name: "Bob again" }), "updateuser");
		gone(await app.api("invokeoutreach", { userkey: bob.userkey }), "invokeoutreach");
		gone(await app.api("applyreferrercode", { userkey: bob.userkey, referrercode: ann.referralcode }), "applyreferrercode");
		gone(await app.api("remindfriend", { userkey: bob.userkey, frienduserkey: cy.userkey }), "remindfriend from Bob");
		gone(await app.api("remindfriend", { userkey: ann.userkey, frienduserkey: bob.userkey }), "remindfriend to Bob");
		gone(await app.api("checkrewardstatus", { rewarddtlid: own!.rewarddtlid }), "checkrewardstatus");
		gone(
			await app.api("changerewardstatus", { rewardslist: [{ rewarddtlid: own!.rewarddtlid, rewardstatus: "Rejected" }] }),
			"changerewardstatus",
		);

		// Nothing changed: no event, the same rewards (amounts, statuses, versions), nothing redeemed.
		expect(await events()).toEqual(eventsBefore);
		const money = (list: typeof bobRewards) => list.map((r) => [r.rewarddtlid, r.amount, r.redeemed, r.rewardstatus, r.version]);
		expect(money(await bobLedger.listRewards())).toEqual(money(bobRewards));
		// Its friends and referrer are not erased with it.
		expect((await app.api("getfriendsandrewards", { userkey: ann.userkey })).status).toBe(200);
		expect((await app.api("getuserbalance", { userkey: cy.userkey, campaignid: String(app.campaignid) })).status).toBe(200);
	});

	it("has no share page any more, even through a link signed before the erasure, nor a share link", async () => {
		const { bob, sharepage } = await erasedBob();
		const page = await request(new URL(sharepage).pathname + new URL(sharepage).search);
		expect(page.status).toBe(410);
		expect(await page.text()).not.toContain(bob.referralcode);
		expect((await request(`/r/${bob.referralcode}`, { redirect: "manual" })).status).toBe(404);
	});

	it("earns nothing from its friends' events once erased; the friend's events are still recorded", async () => {
		const { app, cy, bobLedger, bobRewards } = await erasedBob();
		const res = await app.api("registerconversionevent", {
			userkey: cy.userkey,
			eventname: "Signup",
			customid: customid(),
			growthhack: "Second",
		});
		expect(res.status).toBe(200);
		expect(res.body.duplicate).toBe(false);
		expect((await bobLedger.listRewards()).length).toBe(bobRewards.length);
	});
});

describe("messages queued before an erasure", () => {
	it("are delivered from the redacted record: a webhook without the person, no email to the person", async () => {
		const key = uniqueKey("erased");
		const n = crypto.randomUUID().slice(0, 8);
		const app = await createApp({}, { webhookurl: hookUrl(key) });
		const bob = (await app.api("register", { email: `queued-${n}@example.com`, name: `Queued Bob ${n}` })).body;
		// Recorded and handed to the queue before the erasure: each message carries its event, personal data included.
		const hook = await recordEvent(
			webhookEvent(app.appid, "user.registered", { userkey: bob.userkey, email: `queued-${n}@example.com`, name: `Queued Bob ${n}` }),
		);
		const mail = await recordEvent(
			emailEvent(
				app.appid,
				"email.outreach",
				{
					to: `queued-${n}@example.com`,
					toName: `Queued Bob ${n}`,
					subject: "Your link",
					text: `Hi Queued Bob ${n}`,
					html: `<p>Hi Queued Bob ${n}</p>`,
				},
				true,
			),
		);
		const messages = [hook, mail].map((e) => ({ body: outboxMessage(e) }));
		expect(JSON.stringify(messages)).toContain(`queued-${n}@example.com`);

		expect((await admin("DELETE", `/apps/${app.appid}/users/${bob.userkey}`)).status).toBe(200);
		const { send, runEnv } = recordedEmail();
		await runBatch(messages, runEnv);

		const [delivered] = await received(key).then((all) => all.filter((r) => r.headers["webhook-id"] === hook.eventid));
		expect(delivered).toBeDefined();
		expect(delivered!.body).not.toContain(`queued-${n}`);
		expect(delivered!.body).not.toContain(`Queued Bob ${n}`);
		expect(JSON.parse(delivered!.body).data).toMatchObject({ userkey: bob.userkey, email: "", name: "" });
		expect(send).not.toHaveBeenCalled();
		expect(await attemptsOf(mail.eventid)).toEqual([expect.objectContaining({ outcome: "skipped" })]);
	});
});
