import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { storeInboxEvent } from "../../src/db/stripe-inbox";
import { stripeQueue } from "../../src/integrations/stripe/consumer";
import { type StripeEventMessage, stripeObjectSchema } from "../../src/integrations/stripe/events";
import { admin, createApp } from "../support/api";

/**
 * The Stripe queue's consumer settles message by message (issue 31): one
 * message whose work fails (here D1 refusing every statement about it) is
 * retried alone; the messages before and after it in the batch are done and
 * acked, so none of them is delivered again.
 */

/** env.DB failing every statement bound with `poisoned` among its values, as D1 fails a query; the rest pass. */
function dbFailingFor(poisoned: string): D1Database {
	const bad = new WeakSet<object>();
	const real = new WeakMap<object, D1PreparedStatement>();
	const wrap = (statement: D1PreparedStatement, failing: boolean): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), values.includes(poisoned));
				const value = Reflect.get(target, prop);
				if (typeof value !== "function") return value;
				if (failing && ["first", "run", "all", "raw"].includes(String(prop))) {
					return () => Promise.reject(new Error("D1_ERROR: injected failure"));
				}
				return value.bind(target);
			},
		});
		if (failing) bad.add(proxy);
		real.set(proxy, statement);
		return proxy;
	};
	return new Proxy(env.DB, {
		get(target, prop) {
			if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), false);
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) =>
					statements.some((s) => bad.has(s))
						? Promise.reject(new Error("D1_ERROR: injected failure"))
						: target.batch(statements.map((s) => real.get(s) ?? s));
			}
			const value = Reflect.get(target, prop);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

async function stripeApp() {
	const app = await createApp({
		distribution: "Stripe",
		currency: "USD",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
	});
	const stripe = {
		secretkey: "sk_test_consumer0000",
		webhooksecret: "whsec_consumerTest0000",
		apiurl: `${env.WEBHOOK_RECEIVER_URL}/stripe-consumer`,
	};
	expect((await admin("PATCH", `/apps/${app.appid}`, { stripe })).status).toBe(200);
	return app;
}

const tag = () => crypto.randomUUID().slice(0, 8);

describe("the Stripe consumer settles each message on its own", () => {
	it("retries only the message that failed; the payments before and after it are recorded and acked", async () => {
		const app = await stripeApp();
		const payments: StripeEventMessage[] = [];
		for (const n of [1, 2, 3]) {
			const who = `${tag()}${n}`;
			const referrer = (await app.api("register", { email: `ref${who}@example.com`, paymentcustomerid: `cus_ref_${who}` })).body;
			const friend = await app.api("register", {
				email: `friend${who}@example.com`,
				paymentcustomerid: `cus_friend_${who}`,
				referrercode: referrer.referralcode,
			});
			expect(friend.status).toBe(200);
			const object = stripeObjectSchema.parse({
				id: `in_${who}`,
				customer: `cus_friend_${who}`,
				amount_paid: 10_000,
				currency: "usd",
				charge: `ch_${who}`,
			});
			payments.push({ appid: app.appid, eventid: `evt_${who}`, type: "invoice.paid", object });
		}
		// Stored as the endpoint stores them before answering Stripe (not sent: this test hands them to the consumer itself).
		for (const p of payments) {
			expect(
				await storeInboxEvent(env.DB, { appid: p.appid, eventid: p.eventid, type: p.type, object: JSON.stringify(p.object) }, Date.now()),
			).toBe(true);
		}
		const failing = payments[1]!;
		const batch = createMessageBatch(
			"referral-stripe",
			payments.map((p, i) => ({ id: `m${i}-${tag()}`, timestamp: new Date(), attempts: 1, body: { stripeEvent: p } })),
		);
		const retried = batch.messages.map((m) => vi.spyOn(m, "retry"));
		const ctx = createExecutionContext();
		await stripeQueue(batch, { ...env, DB: dbFailingFor(failing.eventid) }, ctx);
		const result = await getQueueResult(batch, ctx);

		const [first, second, third] = batch.messages.map((m) => m.id);
		expect(result.explicitAcks.sort()).toEqual([first, third].sort());
		expect(result.retryMessages.map((m) => m.msgId)).toEqual([second]);
		expect(result.retryBatch.retry).toBe(false);
		expect(retried.map((spy) => spy.mock.calls.length)).toEqual([0, 1, 0]);

		// The acked ones did their work (and are done in the inbox); the failed one is still open for its retry or the sweep.
		const inbox = await env.DB.prepare("SELECT eventid, outcome, done_at FROM stripe_inbox WHERE appid = ? ORDER BY eventid")
			.bind(app.appid)
			.all<{ eventid: string; outcome: string | null; done_at: number | null }>();
		const byId = new Map(inbox.results.map((r) => [r.eventid, r]));
		expect(byId.get(payments[0]!.eventid)).toMatchObject({ outcome: "converted" });
		expect(byId.get(payments[2]!.eventid)).toMatchObject({ outcome: "converted" });
		expect(byId.get(failing.eventid)).toMatchObject({ outcome: null, done_at: null });

		// Its retry, with D1 answering again, records it too.
		const again = createMessageBatch("referral-stripe", [
			{ id: `r-${tag()}`, timestamp: new Date(), attempts: 2, body: { stripeEvent: failing } },
		]);
		const ctx2 = createExecutionContext();
		await stripeQueue(again, env, ctx2);
		expect((await getQueueResult(again, ctx2)).explicitAcks).toEqual([again.messages[0]!.id]);
		const done = await env.DB.prepare("SELECT outcome FROM stripe_inbox WHERE appid = ? AND eventid = ?")
			.bind(app.appid, failing.eventid)
			.first<{ outcome: string }>();
		expect(done?.outcome).toBe("converted");
	});
});
