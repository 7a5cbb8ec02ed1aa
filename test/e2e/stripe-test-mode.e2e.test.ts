import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { type FakeStripe, startFakeStripe } from "./fake-stripe";
import { serviceClient } from "./service-client";
import { chargeRefunded, invoicePaid } from "./stripe-harness";
import { waitFor } from "./wait";

// Issue 47, test mode reaches Stripe (docs/test-mode.md "Stripe"), end to end against `wrangler dev`: a
// test twin's Stripe events read the live app's campaigns (they are shared) and its rewards are paid through
// the test connection only. The matrix (Stripe half): every Stripe event type the service handles, sent
// signed to the live endpoint with live-mode events and to the test endpoint with test-mode events, gives
// the same outcome on each side, and nothing crosses: each local Stripe (one per connection, recording
// every call) sees only its own mode's key and customers.

type Side = "live" | "test";
const SECRETS: Record<Side, string> = { live: "whsec_e2eMatrixLive000001", test: "whsec_e2eMatrixTest000001" };
const KEYS: Record<Side, string> = { live: "sk_live_e2eMatrixLive01", test: "sk_test_e2eMatrixTest01" };
const signer = new Stripe("sk_test_unused");

let service: Awaited<ReturnType<typeof startService>>;
const fakes = {} as Record<Side, FakeStripe>;
let appid = "";
const keys = {} as Record<Side, { apikey: string; privatekey: string }>;

beforeAll(async () => {
	[service, fakes.live, fakes.test] = await Promise.all([
		startService({ name: "stripe-testmode", vars: { STRIPE_REDRIVE_AFTER_MS: "3000", STRIPE_INBOX_RESEND_AFTER_MS: "3000" } }),
		startFakeStripe(),
		startFakeStripe(),
	]);
	const created = await admin("POST", "/apps", { name: "Stripe test mode shop" });
	expect(created.status).toBe(201);
	appid = created.body.appid;
	keys.live = { apikey: created.body.apikey, privatekey: created.body.privatekey };
	keys.test = { apikey: created.body.testapikey, privatekey: created.body.testprivatekey };
	const campaign = await admin("POST", `/apps/${appid}/campaigns`, {
		campaignname: "10 % paid into Stripe",
		distribution: "Stripe",
		currency: "USD",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
	});
	expect(campaign.status).toBe(201);
	const connected = await admin("PATCH", `/apps/${appid}`, {
		stripe: { secretkey: KEYS.live, webhooksecret: SECRETS.live, apiurl: fakes.live.url },
		teststripe: { secretkey: KEYS.test, webhooksecret: SECRETS.test, apiurl: fakes.test.url },
	});
	expect(connected.status).toBe(200);
}, 120_000);

afterAll(async () => {
	await service?.stop();
	await fakes.live?.close();
	await fakes.test?.close();
});

const client = serviceClient(() => service);
const admin = client.admin;
const api = (side: Side) => (operation: string, body: Record<string, unknown>) => client.api(operation, { ...keys[side], ...body });
const context = () =>
	`${service.logs().slice(-3000)}\nlive Stripe: ${JSON.stringify(fakes.live.calls.slice(-3))}\ntest Stripe: ${JSON.stringify(fakes.test.calls.slice(-3))}`;
const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, { timeoutMs: 45_000, context });
const sweep = () => fetch(`${service.base}/__scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(() => undefined);

/** The side's Stripe event counts (the app's `stripe.events` or `teststripe.events`). */
async function counts(side: Side): Promise<Record<string, number>> {
	const view = (await admin("GET", `/apps/${appid}`)).body;
	return (side === "live" ? view.stripe : view.teststripe).events ?? {};
}

/** Posts `event` signed with the side's secret to the side's endpoint, in the side's mode. */
async function deliver(side: Side, event: Record<string, unknown>): Promise<number> {
	const payload = JSON.stringify({ ...event, livemode: side === "live" });
	const signature = signer.webhooks.generateTestHeaderString({ payload, secret: SECRETS[side] });
	const endpoint = side === "live" ? appid : `${appid}_test`;
	const res = await fetch(`${service.base}/integrations/stripe/${endpoint}`, {
		method: "POST",
		headers: { "content-type": "application/json", "stripe-signature": signature },
		body: payload,
	});
	await res.text();
	return res.status;
}

/** Delivers, then waits until the side counted one more of `outcome`: the outcome this event had. */
async function step(side: Side, event: Record<string, unknown>, outcome: string): Promise<string> {
	const before = (await counts(side))[outcome] ?? 0;
	expect(await deliver(side, event)).toBe(200);
	await until(`${side}: ${String(event.type)} counted ${outcome}`, async () => ((await counts(side))[outcome] ?? 0) > before || undefined);
	return outcome;
}

async function settles(side: Side, customer: string, owed: number) {
	await until(`${side}: Stripe's net for ${customer} at ${owed}`, async () => {
		await sweep();
		return fakes[side].net(customer) === owed || undefined;
	});
}

const event = (side: Side, type: string, object: Record<string, unknown>) => ({
	id: `evt_${side}_${type.replace(/\W/g, "_")}_${String(object.id)}`,
	object: "event",
	type,
	created: Math.floor(Date.now() / 1000),
	data: { object },
});

const checkout = (id: string, customer: string, amount: number, extra: Record<string, unknown> = {}) => ({
	id,
	object: "checkout.session",
	customer,
	amount_total: amount,
	currency: "usd",
	payment_status: "paid",
	...extra,
});

describe("test mode reaches Stripe", { timeout: 180_000 }, () => {
	it("a test-mode invoice.paid converts and pays the test referrer through the test Stripe connection", async () => {
		const test = api("test");
		const referrer = (await test("register", { email: "tess@example.com", paymentcustomerid: "cus_test_tess" })).body;
		const friend = await test("register", {
			email: "tess.friend@example.com",
			paymentcustomerid: "cus_test_tess_friend",
			referrercode: referrer.referralcode,
		});
		expect(friend.status).toBe(200);
		const paid = invoicePaid("cus_test_tess_friend", 10_000);
		expect(await deliver("test", paid)).toBe(200);
		await settles("test", "cus_test_tess", -1000);
		expect(await counts("test")).toMatchObject({ converted: 1 });
		expect((await test("checkrewardstatus", { rewarddtlid: `${referrer.userkey}-1` })).body.rewardstatus).toBe("Rewarded");
		// Only through the test connection, with the test key.
		expect(fakes.test.calls.every((c) => c.authorization === `Bearer ${KEYS.test}`)).toBe(true);
		expect(fakes.live.calls).toEqual([]);
	});

	it("every Stripe event type the service handles: the same outcome in test and live, and nothing crosses", async () => {
		/** One side's run of every handled event type; answers the outcome of each step. */
		const run = async (side: Side) => {
			const call = api(side);
			const cus = (name: string) => `cus_${side}_m_${name}`;
			const referrer = (await call("register", { email: `rita.${side}@example.com`, paymentcustomerid: cus("rita") })).body;
			const friend = await call("register", {
				email: `fred.${side}@example.com`,
				paymentcustomerid: cus("fred"),
				referrercode: referrer.referralcode,
			});
			expect(friend.status).toBe(200);
			const promo = fakes[side].promotionCode(referrer.referralcode);
			const outcomes: string[] = [];
			// invoice.paid of a referred friend: a conversion, 10 % paid to the referrer.
			const paid = invoicePaid(cus("fred"), 10_000);
			outcomes.push(await step(side, paid, "converted"));
			await settles(side, cus("rita"), -1000);
			// charge.refunded, part of it: the reward shrinks, the difference taken back.
			outcomes.push(await step(side, chargeRefunded(paid, 4000), "refunded"));
			await settles(side, cus("rita"), -600);
			// checkout.session.completed of the friend: another conversion.
			const fredCheckout = checkout(`cs_${side}_m_fred`, cus("fred"), 5000, { payment_intent: `pi_${side}_m_fred` });
			outcomes.push(await step(side, event(side, "checkout.session.completed", fredCheckout), "converted"));
			await settles(side, cus("rita"), -1100);
			// A new customer with the referrer's promotion code: a new user, referred, and the referrer earns.
			const promoted = checkout(`cs_${side}_m_nina`, cus("nina"), 2000, { discounts: [{ coupon: "co_m", promotion_code: promo }] });
			outcomes.push(await step(side, event(side, "checkout.session.completed", promoted), "promotion_code:attributed"));
			await settles(side, cus("rita"), -1300);
			// A stranger typing the referrer's email: nobody linked, nothing paid, a case.
			const typed = checkout(`cs_${side}_m_eve`, cus("eve"), 3000, { customer_details: { email: `rita.${side}@example.com` } });
			outcomes.push(await step(side, event(side, "checkout.session.completed", typed), "unlinked_email"));
			// A customer nobody knows: nothing.
			outcomes.push(await step(side, invoicePaid(cus("nobody"), 1000), "unknown_customer"));
			// A type the service does not handle: counted by type.
			outcomes.push(await step(side, event(side, "customer.created", { id: cus("other") }), "ignored:customer.created"));
			await settles(side, cus("rita"), -1300);
			// charge.dispute.created, then .closed lost, on the invoice: reversed as a full refund, what was paid taken back.
			const dispute = (id: string, charge: string | null, intent: string, amount: number, status: string) => ({
				id,
				object: "dispute",
				amount,
				currency: "usd",
				charge,
				payment_intent: intent,
				reason: "fraudulent",
				status,
			});
			const lost = dispute(`dp_${side}_m_lost`, paid.charge, paid.intent, 10_000, "needs_response");
			outcomes.push(await step(side, event(side, "charge.dispute.created", lost), "dispute_opened"));
			const lostClose = { ...event(side, "charge.dispute.closed", { ...lost, status: "lost" }), id: `evt_${side}_lost` };
			outcomes.push(await step(side, lostClose, "dispute_lost"));
			await settles(side, cus("rita"), -700);
			// A dispute of the checkout's payment, won: nothing taken back.
			const won = dispute(`dp_${side}_m_won`, null, `pi_${side}_m_fred`, 5000, "needs_response");
			outcomes.push(await step(side, event(side, "charge.dispute.created", won), "dispute_opened"));
			const wonClose = { ...event(side, "charge.dispute.closed", { ...won, status: "won" }), id: `evt_${side}_won` };
			outcomes.push(await step(side, wonClose, "dispute_won"));
			await settles(side, cus("rita"), -700);
			return outcomes;
		};
		const live = await run("live");
		const test = await run("test");
		expect(test).toEqual(live);
		// The same counts on both sides, but for the first test's own conversion.
		const liveCounts = await counts("live");
		const testCounts = await counts("test");
		expect({ ...testCounts, converted: (testCounts.converted ?? 0) - 1 }).toEqual(liveCounts);
		// Nothing crossed: each Stripe saw only its own key and its own mode's customers.
		expect(fakes.live.calls.length).toBeGreaterThan(0);
		for (const side of ["live", "test"] as const) {
			const other = side === "live" ? "test" : "live";
			expect(fakes[side].calls.filter((c) => c.authorization !== `Bearer ${KEYS[side]}`)).toEqual([]);
			expect(fakes[side].calls.filter((c) => c.path.includes(`cus_${other}_`))).toEqual([]);
			expect(fakes[side].created.map((t) => t.customer).filter((c) => !c.startsWith(`cus_${side}_`))).toEqual([]);
		}
		// The cases each side shows are its own.
		const view = (await admin("GET", `/apps/${appid}`)).body;
		for (const side of ["live", "test"] as const) {
			const cases = (side === "live" ? view.stripe : view.teststripe).cases as { eventid: string; kind: string }[];
			expect(cases.map((c) => c.kind).sort()).toEqual([
				"dispute_lost",
				"dispute_opened",
				"dispute_opened",
				"dispute_won",
				"unlinked_email",
			]);
			expect(cases.every((c) => c.eventid.startsWith(`evt_${side}_`))).toBe(true);
		}
		// Each side's users stay its own.
		expect((await api("live")("register", { email: "rita.test@example.com" })).body.hasreferrer).toBe(false);
	});
});
