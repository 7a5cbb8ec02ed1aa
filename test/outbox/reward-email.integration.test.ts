import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EmailPayload } from "../../src/domain/outbox-event";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";

/**
 * The reward-earned email (issue 34, docs/messages.md): queued by the ledger
 * with the reward, rendered and recorded by its flush under an id derived
 * from the reward, so it is sent once per reward whatever the retries; never
 * to an erased user; in the campaign's own text once saved.
 */

type App = Awaited<ReturnType<typeof createApp>>;

const SENDER = { emailsender: "rewards@shop.example.com" };

async function program(campaign: Record<string, unknown> = {}, app: Record<string, unknown> = SENDER) {
	return createApp(
		{
			campaignstartdate: "2020-01-01T00:00:00Z",
			offertitle: "Give 5, get 10",
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 5.5, rewardunit: "USD" },
			],
			...campaign,
		},
		app,
	);
}

async function pair(app: App, referrerName = "Ann Lee") {
	const tag = crypto.randomUUID().slice(0, 8);
	const ann = (await app.api<{ userkey: string; referralcode: string }>("register", { email: `ann-${tag}@x.com`, name: referrerName }))
		.body;
	const bob = (
		await app.api<{ userkey: string }>("register", { email: `bob-${tag}@x.com`, name: "Bob Stone", referrercode: ann.referralcode })
	).body;
	return { ann, bob, annEmail: `ann-${tag}@x.com`, bobEmail: `bob-${tag}@x.com` };
}

const purchase = (app: App, friend: { userkey: string }, customid: string) =>
	app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals" });

const flush = (app: App, ...users: { userkey: string }[]) => Promise.all(users.map((u) => ledgerFor(env, app.appid, u.userkey).flush()));

/** The reward emails recorded for the app (D1 outbox_events), oldest first. */
async function rewardEmails(appid: string): Promise<(EmailPayload & { eventid: string })[]> {
	const { results } = await env.DB.prepare(
		"SELECT eventid, payload FROM outbox_events WHERE appid = ? AND type = 'email.reward' ORDER BY created_at, eventid",
	)
		.bind(appid)
		.all<{ eventid: string; payload: string }>();
	return results.map((r) => ({ eventid: r.eventid, ...(JSON.parse(r.payload) as EmailPayload) }));
}

/** The reward-email entries waiting in a user's ledger outbox. */
const emailEntries = (app: App, user: { userkey: string }) =>
	runInDurableObject(ledgerFor(env, app.appid, user.userkey), (_instance, state) =>
		Number(state.storage.sql.exec("SELECT COUNT(*) AS n FROM outbox WHERE kind = 'email'").one().n),
	);

/** Writes the ledger outbox entry of reward `seq`'s email, as the ledger does when the reward is earned (reward-emails.ts). */
const queueEntry = (app: App, user: { userkey: string }, seq: number) =>
	runInDurableObject(ledgerFor(env, app.appid, user.userkey), (_instance, state) => {
		state.storage.sql.exec(
			"INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM outbox), 'email', ?, ?, 0, ?)",
			`email:${seq}`,
			JSON.stringify({ seq }),
			new Date().toISOString(),
		);
	});

const setSending = (app: App, rewardemail: string) =>
	admin("PUT", `/apps/${app.appid}/campaigns/${app.campaignid}/rewardemail`, { rewardemail });

describe("the reward-earned email", () => {
	it("is sent once per reward to each side, however often the conversion is retried, and reaches local mail", async () => {
		const app = await program();
		const { ann, bob, annEmail, bobEmail } = await pair(app, "Ann & <Co>");
		// The same event five times: three at once, then two more.
		const first = await Promise.all([1, 2, 3].map(() => purchase(app, bob, "order-1")));
		expect(first.map((r) => r.status)).toEqual([200, 200, 200]);
		for (let i = 0; i < 2; i++) expect((await purchase(app, bob, "order-1")).status).toBe(200);
		await flush(app, ann, bob);
		await flush(app, ann, bob);

		const sent = await rewardEmails(app.appid);
		expect(sent.map((e) => e.to).sort()).toEqual([annEmail, bobEmail].sort());
		const toAnn = sent.find((e) => e.to === annEmail);
		const toBob = sent.find((e) => e.to === bobEmail);
		expect(toAnn).toMatchObject({ subject: "You earned 10 USD", livemode: true });
		expect(toAnn?.text).toContain("Hi Ann & <Co>,");
		expect(toAnn?.text).toContain("You earned 10 USD with Give 5, get 10.");
		// A referrer's reward names the friend who earned it; a friend's own reward does not.
		expect(toAnn?.text).toContain("Bob Stone made it happen");
		expect(toBob?.text).toContain("You earned 5.5 USD");
		expect(toBob?.text).not.toContain("made it happen");
		// The HTML part is the text, escaped; the text part is kept as is.
		expect(toAnn?.html).toContain("Hi Ann &amp; &lt;Co&gt;,");
		expect(toAnn?.html).not.toContain("<Co>");

		// A flush replayed after its D1 batch (the object died before removing its entry) records nothing twice.
		await queueEntry(app, ann, 1);
		await flush(app, ann);
		expect(await rewardEmails(app.appid)).toHaveLength(2);

		// Another event of the friend is another reward: one more email each, never a repeat of the first.
		expect((await purchase(app, bob, "order-2")).status).toBe(200);
		await flush(app, ann, bob);
		const after = await rewardEmails(app.appid);
		expect(after).toHaveLength(4);
		expect(new Set(after.map((e) => e.eventid)).size).toBe(4);

		// The consumer sends it: it is in local mail (GET /dev/mail reads dev_mail).
		await expect
			.poll(
				async () =>
					(
						await env.DB.prepare("SELECT COUNT(*) AS n FROM dev_mail WHERE to_address = ? AND subject = ?")
							.bind(annEmail, "You earned 10 USD")
							.first<{ n: number }>()
					)?.n,
				{ timeout: 10_000, interval: 100 },
			)
			.toBe(2);
	});

	it("is not sent to an erased user, even for a reward earned before the erasure", async () => {
		const app = await program();
		const { ann, bob, bobEmail } = await pair(app);
		// Earned while the campaign sends none: the reward exists, its email was never recorded.
		expect((await setSending(app, "off")).status).toBe(200);
		expect((await purchase(app, bob, "order-1")).status).toBe(200);
		await flush(app, ann, bob);
		expect(await rewardEmails(app.appid)).toEqual([]);

		expect((await setSending(app, "on")).status).toBe(200);
		expect((await admin("DELETE", `/apps/${app.appid}/users/${ann.userkey}`)).status).toBe(200);
		// An email queued before the erasure and flushed after it (the ledger's entry for Ann's reward) sends nothing.
		const ledger = ledgerFor(env, app.appid, ann.userkey);
		await queueEntry(app, ann, 1);
		await ledger.flush();
		expect(await rewardEmails(app.appid)).toEqual([]);
		const left = await runInDurableObject(
			ledger,
			(_instance, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM outbox WHERE kind = 'email'").one().n,
		);
		expect(left).toBe(0);
		// An erased referrer earns nothing new, so nothing is sent for later events either.
		expect((await purchase(app, bob, "order-2")).status).toBe(200);
		await flush(app, ann, bob);
		expect((await rewardEmails(app.appid)).filter((e) => e.to !== bobEmail)).toEqual([]);
	});

	it("sends the campaign's own text once saved, checks its variables on save, and follows the campaign's setting", async () => {
		const app = await program({}, {});
		const base = `/apps/${app.appid}/campaigns/${app.campaignid}/messages`;
		const refused = await admin("PUT", `${base}/reward/en`, { subject: "Hi", body: "Hello {{firstname}}" });
		expect(refused.status).toBe(400);
		expect(refused.body).toMatchObject({ errorcode: "unknown_variable", fields: ["body"], unknown: ["firstname"] });
		const saved = await admin("PUT", `${base}/reward/en`, {
			subject: "{{reward}} for you, {{name}}",
			body: "Thanks to {{friendname}}: {{reward}} from {{appname}}.\n\nYour code {{referralcode}}",
		});
		expect(saved.status).toBe(200);
		expect((await admin("GET", base)).body).toMatchObject({ rewardemail: "auto" });

		// No email sender and the default setting (auto): nothing is sent, and nothing is even queued, so the
		// ledgers' flushes make no D1 read for it (decided with the conversion's context read, issue 33's budget).
		const { ann, bob, annEmail } = await pair(app);
		expect((await purchase(app, bob, "order-1")).status).toBe(200);
		expect(await Promise.all([ann, bob].map((u) => emailEntries(app, u)))).toEqual([0, 0]);
		await flush(app, ann, bob);
		expect(await rewardEmails(app.appid)).toEqual([]);

		expect((await setSending(app, "on")).status).toBe(200);
		expect((await setSending(app, "sometimes")).status).toBe(400);
		expect((await purchase(app, bob, "order-2")).status).toBe(200);
		await flush(app, ann, bob);
		const sent = await rewardEmails(app.appid);
		const toAnn = sent.find((e) => e.to === annEmail);
		expect(toAnn?.subject).toBe("10 USD for you, Ann Lee");
		expect(toAnn?.text).toBe(`Thanks to Bob Stone: 10 USD from Test app.\n\nYour code ${ann.referralcode}`);
		// Bob's reward is in the default text: the campaign saved only a text, the friend's is the same kind.
		expect(sent).toHaveLength(2);
	});

	it("is in the language the product last gave for the recipient (invokeoutreach's), else English", async () => {
		const app = await program();
		const { ann, bob, annEmail, bobEmail } = await pair(app);
		expect((await app.api("invokeoutreach", { userkey: ann.userkey, language: "fr-CA" })).status).toBe(200);
		// Kept after the call's answer (waitUntil): wait until it is stored.
		await expect
			.poll(async () => (await env.DB.prepare("SELECT language FROM users WHERE userkey = ?").bind(ann.userkey).first())?.language, {
				timeout: 10_000,
				interval: 50,
			})
			.toBe("fr");
		expect((await purchase(app, bob, "order-1")).status).toBe(200);
		await flush(app, ann, bob);
		const sent = await rewardEmails(app.appid);
		expect(sent.find((e) => e.to === annEmail)?.subject).toBe("Vous avez gagné 10 USD");
		expect(sent.find((e) => e.to === bobEmail)?.subject).toBe("You earned 5.5 USD");
	});

	it("names a coupon reward's code, sent once the code is on the reward", async () => {
		const app = await program({
			distribution: "Coupon",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 1, rewardunit: "USD" }],
		});
		const pool = await admin("POST", `/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { coupons: [{ coupon: "SAVE-10" }] });
		expect(pool.body).toMatchObject({ added: 1 });
		const { ann, bob, annEmail } = await pair(app);
		expect((await purchase(app, bob, "order-1")).status).toBe(200);
		await flush(app, ann);
		const sent = await rewardEmails(app.appid);
		expect(sent.map((e) => [e.to, e.subject])).toEqual([[annEmail, "You earned SAVE-10"]]);
	});
});
