import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { type FakeStripe, startFakeStripe } from "./fake-stripe";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

// Issue 23 end to end against `wrangler dev`: a connected app's Stripe events
// become conversions and refunds, and its Stripe rewards are paid as customer
// balance credits into a local HTTP server playing Stripe's API (fake-stripe.ts),
// which records every request with its Idempotency-Key. Events are signed the
// way Stripe signs them, by the official library.

const WEBHOOK_SECRET = "whsec_e2eTestSigningSecret0123456789";
const stripeLib = new Stripe("sk_test_unused");

let service: Awaited<ReturnType<typeof startService>>;
let fake: FakeStripe;
let appid = "";
let creds = { apikey: "", privatekey: "" };
let nextInvoice = 1;

beforeAll(async () => {
	[service, fake] = await Promise.all([startService({ name: "stripe" }), startFakeStripe()]);
	const created = await admin("POST", "/apps", {
		name: "Stripe shop",
		landingurl: "https://shop.example.com/",
		webhookurl: `${fake.url}/hooks`,
	});
	expect(created.status).toBe(201);
	({ appid } = created.body);
	creds = { apikey: created.body.apikey, privatekey: created.body.privatekey };
	const campaign = await admin("POST", `/apps/${appid}/campaigns`, {
		campaignname: "10% of the first payment",
		distribution: "Stripe",
		currency: "USD",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
	});
	expect(campaign.status).toBe(201);
	const connected = await admin("PATCH", `/apps/${appid}`, {
		stripe: { secretkey: "sk_test_e2eSecretKey4242", webhooksecret: WEBHOOK_SECRET, apiurl: fake.url },
	});
	expect(connected.status).toBe(200);
	expect(connected.body.stripe).toMatchObject({
		connected: true,
		secretkeylast4: "4242",
		eventname: "Transaction",
		webhookurl: `${service.base}/integrations/stripe/${appid}`,
	});
	expect(JSON.stringify(connected.body)).not.toContain("sk_test_e2eSecretKey");
	expect(JSON.stringify(connected.body)).not.toContain(WEBHOOK_SECRET);
}, 120_000);

afterAll(async () => {
	await service?.stop();
	await fake?.close();
});

const client = serviceClient(() => service);
const admin = client.admin;
const api = (operation: string, body: Record<string, unknown>) => client.api(operation, { ...creds, ...body });

/** Sends a Stripe event to the app's endpoint, signed with `secret` as Stripe's libraries sign. */
async function deliver(event: Record<string, unknown>, secret = WEBHOOK_SECRET) {
	const payload = JSON.stringify(event);
	const signature = stripeLib.webhooks.generateTestHeaderString({ payload, secret });
	const res = await fetch(`${service.base}/integrations/stripe/${appid}`, {
		method: "POST",
		headers: { "content-type": "application/json", "stripe-signature": signature },
		body: payload,
	});
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

function invoicePaid(customer: string, amountPaid: number) {
	const n = nextInvoice++;
	return {
		id: `evt_invoice_${n}`,
		object: "event",
		type: "invoice.paid",
		created: Math.floor(Date.now() / 1000),
		data: {
			object: {
				id: `in_${n}`,
				object: "invoice",
				customer,
				amount_paid: amountPaid,
				currency: "usd",
				charge: `ch_${n}`,
				payment_intent: `pi_${n}`,
			},
		},
	};
}

/** A referrer (with `paymentcustomerid`, if given) and a friend paying as `friendCustomer`. */
async function referral(name: string, paymentcustomerid?: string) {
	const referrer = (await api("register", { email: `${name}@example.com`, ...(paymentcustomerid ? { paymentcustomerid } : {}) })).body;
	const friend = (
		await api("register", {
			email: `${name}.friend@example.com`,
			paymentcustomerid: `cus_friend_${name}`,
			referrercode: referrer.referralcode,
		})
	).body;
	return { referrer, friend, friendCustomer: `cus_friend_${name}`, rewardid: `${referrer.userkey}-1` };
}

const context = () => `${service.logs().slice(-3000)}\nfake Stripe calls: ${JSON.stringify(fake.calls.slice(-5))}`;
const status = async (rewarddtlid: string) => (await api("checkrewardstatus", { rewarddtlid })).body;
const paidFor = (customer: string) => fake.created.filter((t) => t.customer === customer);
const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, { timeoutMs: 45_000, context });

describe("Stripe", () => {
	it("a signed invoice.paid makes the conversion and pays the referrer's reward as one balance transaction; three deliveries, concurrent too, pay once", async () => {
		const { friendCustomer, rewardid } = await referral("ann", "cus_ann");
		const event = invoicePaid(friendCustomer, 5000);
		expect(await deliver(event)).toEqual({ status: 200, body: { received: true, handled: true } });
		const rewarded = await until("the reward paid", async () => {
			const s = await status(rewardid);
			return s.rewardstatus === "Rewarded" ? s : undefined;
		});
		const [transaction] = paidFor("cus_ann");
		expect(transaction).toMatchObject({ amount: -500, currency: "usd", idempotencyKey: `payout-${appid}-${rewardid}` });
		expect(rewarded.payoutid).toBe(transaction?.id);
		const again = await Promise.all([deliver(event), deliver(event)]);
		expect(again.map((r) => r.status)).toEqual([200, 200]);
		expect((await deliver(event)).status).toBe(200);
		// The repeats were taken (counted as duplicates) before the check: still one conversion, one payment.
		await until("the repeats counted", async () => {
			const counts = (await admin("GET", `/apps/${appid}`)).body.stripe.events;
			return (counts.duplicate ?? 0) >= 3 ? counts : undefined;
		});
		expect(paidFor("cus_ann")).toHaveLength(1);
		expect(fake.calls.filter((c) => c.path === "/v1/customers/cus_ann/balance_transactions" && !c.replayed)).toHaveLength(1);
		expect(fake.calls[0]?.authorization).toBe("Bearer sk_test_e2eSecretKey4242");
	});

	it("a bad or stale signature is 400 and changes nothing", async () => {
		const { friendCustomer, rewardid } = await referral("bob", "cus_bob");
		const event = invoicePaid(friendCustomer, 4000);
		const forged = await deliver(event, "whsec_notTheAppsSecret0000000");
		expect(forged).toMatchObject({ status: 400, body: { errorcode: "invalid_signature" } });
		const payload = JSON.stringify(event);
		const stale = stripeLib.webhooks.generateTestHeaderString({
			payload,
			secret: WEBHOOK_SECRET,
			timestamp: Math.floor(Date.now() / 1000) - 600,
		});
		const res = await fetch(`${service.base}/integrations/stripe/${appid}`, {
			method: "POST",
			headers: { "stripe-signature": stale },
			body: payload,
		});
		expect(res.status).toBe(400);
		expect((await api("checkrewardstatus", { rewarddtlid: rewardid })).status).toBe(404);
		expect(paidFor("cus_bob")).toEqual([]);
	});

	it("a referrer without paymentcustomerid waits, and is paid once updateuser sets one", async () => {
		const { referrer, friendCustomer, rewardid } = await referral("cid");
		expect((await deliver(invoicePaid(friendCustomer, 3000))).status).toBe(200);
		const waiting = await until("the reward waiting for a customer", async () => {
			const s = await status(rewardid);
			return s.comment?.includes("paymentcustomerid") ? s : undefined;
		});
		expect(waiting.rewardstatus).toBe("Approved");
		expect((await api("updateuser", { userkey: referrer.userkey, paymentcustomerid: "cus_cid" })).status).toBe(200);
		await until("the reward paid", async () => ((await status(rewardid)).rewardstatus === "Rewarded" ? true : undefined));
		expect(paidFor("cus_cid")).toMatchObject([{ amount: -300 }]);
	});

	it("a 404 from Stripe leaves the reward Approved with Stripe's error code and request id (never its text) and sends reward.payout_failed", async () => {
		const { friendCustomer, rewardid } = await referral("gone", "cus_missing");
		expect((await deliver(invoicePaid(friendCustomer, 2000))).status).toBe(200);
		const failed = await until("the payout refused", async () => {
			const s = await status(rewardid);
			return s.comment?.includes("resource_missing") ? s : undefined;
		});
		expect(failed.rewardstatus).toBe("Approved");
		// Stripe's text names the customer: personal data the service does not keep (docs/stripe.md).
		expect(failed.comment).not.toContain("cus_missing");
		expect(failed.comment).toMatch(/request req_\d+/);
		const hook = await until("reward.payout_failed", async () =>
			fake.hooks.find((h) => h.type === "reward.payout_failed" && h.data.reward?.rewarddtlid === rewardid),
		);
		expect(hook.data).toMatchObject({ code: "resource_missing" });
		expect(hook.data.reason).not.toContain("cus_missing");
	});

	it("a 500 then a 200 pays once, under the same Idempotency-Key", async () => {
		const { friendCustomer, rewardid } = await referral("flaky", "cus_flaky_1");
		expect((await deliver(invoicePaid(friendCustomer, 1000))).status).toBe(200);
		await until("the reward paid after a retry", async () => ((await status(rewardid)).rewardstatus === "Rewarded" ? true : undefined));
		const tries = fake.calls.filter((c) => c.path === "/v1/customers/cus_flaky_1/balance_transactions");
		expect(tries.map((c) => c.status)).toEqual([500, 200]);
		expect(new Set(tries.map((c) => c.idempotencyKey))).toEqual(new Set([`payout-${appid}-${rewardid}`]));
		expect(paidFor("cus_flaky_1")).toHaveLength(1);
	});

	it("charge.refunded for half the amount halves the percent reward and books the debit once", async () => {
		const { friendCustomer, rewardid } = await referral("half", "cus_half");
		const paid = invoicePaid(friendCustomer, 8000);
		expect((await deliver(paid)).status).toBe(200);
		await until("the reward paid", async () => ((await status(rewardid)).rewardstatus === "Rewarded" ? true : undefined));
		expect(paidFor("cus_half")).toMatchObject([{ amount: -800 }]);
		const charge = paid.data.object.charge;
		const refunded = {
			id: `evt_refund_${charge}`,
			object: "event",
			type: "charge.refunded",
			created: Math.floor(Date.now() / 1000),
			data: {
				object: {
					id: charge,
					object: "charge",
					customer: friendCustomer,
					amount: 8000,
					amount_refunded: 4000,
					currency: "usd",
					payment_intent: paid.data.object.payment_intent,
				},
			},
		};
		expect((await deliver(refunded)).status).toBe(200);
		expect((await deliver(refunded)).status).toBe(200);
		await until("the debit", async () => (paidFor("cus_half").length === 2 ? true : undefined));
		expect((await status(rewardid)).comment).toContain("Refunded in Stripe");
		const reward = (await api("getfriendsandrewards", { userkey: rewardid.replace(/-1$/, "") })).body;
		expect(JSON.stringify(reward)).toContain('"reward":"4"');
		expect(paidFor("cus_half").map((t) => t.amount)).toEqual([-800, 400]);
		// A third delivery later still books nothing more.
		await until("the repeat counted", async () => {
			const counts = (await admin("GET", `/apps/${appid}`)).body.stripe.events;
			return (counts.duplicate ?? 0) >= 4 ? true : undefined;
		});
		expect(paidFor("cus_half")).toHaveLength(2);
	});

	it("redeemrewards refuses a Stripe reward: 400 not_wallet_distribution", async () => {
		const { referrer, friendCustomer, rewardid } = await referral("redeem", "cus_redeem");
		expect((await deliver(invoicePaid(friendCustomer, 1500))).status).toBe(200);
		await until("the reward", async () => ((await status(rewardid)).rewardstatus ? true : undefined));
		const refused = await api("redeemrewards", { userkey: referrer.userkey, rewarddtlids: [rewardid] });
		expect(refused).toMatchObject({ status: 400, body: { errorcode: "not_wallet_distribution" } });
	});
});
