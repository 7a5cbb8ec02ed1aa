import { env } from "cloudflare:workers";
import type Stripe from "stripe";
import { describe, expect, it } from "vitest";
import type { StripeEventMessage } from "../../src/integrations/stripe/events";
import { stripeObjectSchema } from "../../src/integrations/stripe/events";
import { runStripeEvent } from "../../src/integrations/stripe/handle";
import { admin, createApp } from "../support/api";

/**
 * Promotion codes at checkout (issue 34, docs/stripe.md "Promotion codes"):
 * the Stripe consumer's code, run on events as the endpoint stores them.
 * Stripe's API is the test receiver (test/outbox/receiver.mjs): the Stripe
 * client sends `GET /v1/promotion_codes/<id>` there, recorded under the key
 * `promotion_codes/<id>`, and answered with the promotion code a test set.
 */

const RECEIVER = env.WEBHOOK_RECEIVER_URL;
const uid = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

/** Stripe answers `object` to GET /v1/<path> (the receiver's key is the path after /v1/). */
async function stripeAnswers(path: string, object: unknown): Promise<void> {
	await fetch(`${RECEIVER}/__mode/${path}`, {
		method: "POST",
		body: JSON.stringify({ default: { status: 200, body: JSON.stringify(object) } }),
	});
}
const stripeReads = async (path: string) => ((await (await fetch(`${RECEIVER}/__received/${path}`)).json()) as unknown[]).length;

/** A promotion code of the library's type, carrying the customer-facing `code`. */
async function promotionCode(code: string): Promise<string> {
	const id = `promo_${uid()}`;
	const promotion: Pick<Stripe.PromotionCode, "id" | "object" | "code" | "active"> = { id, object: "promotion_code", code, active: true };
	await stripeAnswers(`promotion_codes/${id}`, promotion);
	return id;
}

async function connectedApp() {
	const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "USD" }] });
	const stripe = { secretkey: "sk_test_promo0000", webhooksecret: "whsec_promoTestSecret00", apiurl: `${RECEIVER}/stripe` };
	expect((await admin("PATCH", `/apps/${app.appid}`, { stripe })).status).toBe(200);
	const register = async (email: string, extra: Record<string, unknown> = {}) => {
		const res = await app.api("register", { email, ...extra });
		expect(res.status).toBe(200);
		return res.body as { userkey: string; referralcode: string; hasreferrer: boolean; referrercode: string };
	};
	/** Runs a stored event as the consumer does (the object read through the endpoint's schema). */
	const run = async (type: string, object: Record<string, unknown>) => {
		const work: StripeEventMessage = { appid: app.appid, eventid: `evt_${uid()}`, type, object: stripeObjectSchema.parse(object) };
		return runStripeEvent(env, work, () => undefined);
	};
	const counts = async () => (await admin("GET", `/apps/${app.appid}`)).body.stripe.events as Record<string, number>;
	const earned = async (userkey: string) => {
		type Friend = { email: string; earnedrewards: { reward: string; rewardstatus: string }[] };
		const friends = (await app.api("getfriendsandrewards", { userkey })).body.friends as Friend[];
		// Each friend's rewards for the referrer, as amounts, by the friend's email ("" for a user known by its customer alone).
		const byEmail: Record<string, string[]> = {};
		for (const f of friends)
			if (f.earnedrewards.length > 0) byEmail[f.email] = [...(byEmail[f.email] ?? []), ...f.earnedrewards.map((r) => r.reward)];
		return byEmail;
	};
	return { app, register, run, counts, earned };
}

/** The users the app has with this Stripe customer (what the product or a promotion code linked). */
async function usersOfCustomer(appid: string, customer: string) {
	const rows = await env.DB.prepare("SELECT email, referrer_userid FROM users WHERE appid = ? AND paymentcustomerid = ?")
		.bind(appid, customer)
		.all();
	return rows.results;
}

/** A paid checkout session (Stripe.Checkout.Session) whose discount carries a promotion code. */
function checkout(customer: string, email: string, promotion: string): Record<string, unknown> {
	const session: Pick<Stripe.Checkout.Session, "id" | "object" | "amount_total" | "currency" | "payment_status" | "discounts"> & {
		customer: string;
		customer_details: Pick<Stripe.Checkout.Session.CustomerDetails, "email">;
	} = {
		id: `cs_${uid()}`,
		object: "checkout.session",
		customer,
		customer_details: { email },
		amount_total: 5000,
		currency: "usd",
		payment_status: "paid",
		discounts: [{ coupon: "co_promo", promotion_code: promotion }],
	};
	return session;
}

/** A paid invoice of the pinned API version: its discounts as ids (`di_...`), expanded only when Stripe is asked. */
async function invoiceWithDiscountIds(customer: string, promotion: string): Promise<Record<string, unknown>> {
	const id = `in_${uid()}`;
	const discount: Pick<Stripe.Discount, "id" | "object" | "promotion_code" | "invoice" | "start"> = {
		id: `di_${uid()}`,
		object: "discount",
		promotion_code: promotion,
		invoice: null,
		start: 1_764_000_000,
	};
	// GET /v1/invoices/{id}?expand[]=discounts: each discount a Stripe.Discount.
	const expanded: Pick<Stripe.Invoice, "id" | "object"> & { discounts: (typeof discount)[] } = {
		id,
		object: "invoice",
		discounts: [discount],
	};
	await stripeAnswers(`invoices/${id}`, expanded);
	const invoice: Pick<Stripe.Invoice, "id" | "object" | "amount_paid" | "currency" | "discounts"> & { customer: string } = {
		id,
		object: "invoice",
		customer,
		amount_paid: 5000,
		currency: "usd",
		discounts: [discount.id],
	};
	return invoice;
}

describe("promotion codes at checkout", () => {
	it("attributes a new customer to the code's owner (ignoring case), creates its user known by its customer alone, and the referrer earns", async () => {
		const { app, register, run, counts, earned } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const promo = await promotionCode(referrer.referralcode.toLowerCase());
		const email = `new.${uid()}@example.com`;
		const customer = `cus_${uid()}`;
		expect(await run("checkout.session.completed", checkout(customer, email, promo))).toBe("ack");
		const created = await usersOfCustomer(app.appid, customer);
		expect(created).toEqual([{ email: null, referrer_userid: expect.any(Number) }]);
		// The typed email is not stored (issue 47): registering it is another user, without a referrer.
		expect(await register(email)).toMatchObject({ hasreferrer: false });
		expect(await earned(referrer.userkey)).toEqual({ "": ["10"] });
		expect(await counts()).toMatchObject({ "promotion_code:attributed": 1, converted: 1 });
	});

	it("attributes an existing user without a referrer, by an invoice listing discount ids, through a vanity code's alias", async () => {
		const { app, register, run, counts, earned } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const vanity = `VAN${uid()}`.toUpperCase();
		expect((await app.api("updateuser", { userkey: referrer.userkey, referralcode: vanity })).status).toBe(200);
		const customer = `cus_${uid()}`;
		const email = `known.${uid()}@example.com`;
		await register(email, { paymentcustomerid: customer });
		// The printed code from before the vanity code still names the referrer.
		const promo = await promotionCode(referrer.referralcode);
		expect(await run("invoice.paid", await invoiceWithDiscountIds(customer, promo))).toBe("ack");
		expect(await register(email)).toMatchObject({ hasreferrer: true, referrercode: vanity });
		expect(await earned(referrer.userkey)).toEqual({ [email]: ["10"] });
		expect(await counts()).toMatchObject({ "promotion_code:attributed": 1, converted: 1 });
	});

	it("refuses a customer's own code and counts it; the payment still converts, referring nobody", async () => {
		const { register, run, counts, earned } = await connectedApp();
		const customer = `cus_${uid()}`;
		const email = `self.${uid()}@example.com`;
		const self = await register(email, { paymentcustomerid: customer });
		const promo = await promotionCode(self.referralcode);
		expect(await run("checkout.session.completed", checkout(customer, email, promo))).toBe("ack");
		expect(await register(email)).toMatchObject({ hasreferrer: false });
		expect(await earned(self.userkey)).toEqual({});
		expect(await counts()).toEqual({ "promotion_code:self_referral": 1, converted: 1 });
	});

	it("keeps an existing referrer (Stripe is not asked), and reads a promotion code from Stripe once", async () => {
		const { app, register, run, counts, earned } = await connectedApp();
		const first = await register(`first.${uid()}@example.com`);
		const other = await register(`other.${uid()}@example.com`);
		const customer = `cus_${uid()}`;
		const email = `kept.${uid()}@example.com`;
		await register(email, { paymentcustomerid: customer, referrercode: first.referralcode });
		const promo = await promotionCode(other.referralcode);
		expect(await run("checkout.session.completed", checkout(customer, email, promo))).toBe("ack");
		expect(await register(email)).toMatchObject({ referrercode: first.referralcode });
		expect(await earned(first.userkey)).toEqual({ [email]: ["10"] });
		expect(await stripeReads(`promotion_codes/${promo}`)).toBe(0);
		// Two new customers with the same promotion code: both attributed, the code read from Stripe once.
		const customers = [`cus_${uid()}`, `cus_${uid()}`];
		for (const c of customers) expect(await run("checkout.session.completed", checkout(c, `${c}@example.com`, promo))).toBe("ack");
		expect(await stripeReads(`promotion_codes/${promo}`)).toBe(1);
		// Known by their customers alone (no email stored): the referrer's friends are two users without one.
		expect(await earned(other.userkey)).toEqual({ "": ["10", "10"] });
		for (const c of customers) expect(await usersOfCustomer(app.appid, c)).toEqual([{ email: null, referrer_userid: expect.any(Number) }]);
		expect(await counts()).toMatchObject({ "promotion_code:attributed": 2, converted: 3 });
	});
});

describe("identity from the product, never from a typed email (issue 47)", () => {
	it("a payment whose email is a user's who never linked that customer links nobody, refers nobody, converts nothing, and is shown", async () => {
		const { app, register, run, counts, earned } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const email = `victim.${uid()}@example.com`;
		const victim = await register(email);
		const promo = await promotionCode(referrer.referralcode);
		const attacker = `cus_${uid()}`;
		const checkoutObject = checkout(attacker, email.toUpperCase(), promo);
		const work = {
			appid: app.appid,
			eventid: `evt_${uid()}`,
			type: "checkout.session.completed",
			object: stripeObjectSchema.parse(checkoutObject),
		};
		expect(await runStripeEvent(env, work, () => undefined)).toBe("ack");
		expect(await usersOfCustomer(app.appid, attacker)).toEqual([]);
		expect(await register(email)).toMatchObject({ userkey: victim.userkey, hasreferrer: false });
		expect(await earned(referrer.userkey)).toEqual({});
		expect(await counts()).toEqual({ unlinked_email: 1 });
		// Shown to the operator: the event, the customer, whose email it carried; run again (as a redelivery the
		// inbox did not stop: this test runs the consumer's code without the inbox), the case is recorded once.
		expect(await runStripeEvent(env, work, () => undefined)).toBe("ack");
		const view = (await admin("GET", `/apps/${app.appid}`)).body.stripe;
		expect(view.cases).toEqual([
			{
				eventid: work.eventid,
				kind: "unlinked_email",
				customer: attacker,
				userkey: victim.userkey,
				detail: expect.any(String),
				at: expect.any(String),
			},
		]);
		// Without a promotion code too: the same email pays nobody and is shown.
		expect(await run("checkout.session.completed", { ...checkoutObject, id: `cs_${uid()}`, discounts: [] })).toBe("ack");
		expect(await counts()).toMatchObject({ unlinked_email: 3 });
		// Once the product links the customer (updateuser), its payments are that user's.
		expect((await app.api("updateuser", { userkey: victim.userkey, paymentcustomerid: attacker })).status).toBe(200);
		expect(await run("checkout.session.completed", { ...checkoutObject, id: `cs_${uid()}` })).toBe("ack");
		expect(await counts()).toMatchObject({ converted: 1, "promotion_code:attributed": 1 });
	});

	it("a checkout and its invoice of one new customer, at once, make one user", async () => {
		const { app, register, run, counts } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const promo = await promotionCode(referrer.referralcode);
		const customer = `cus_${uid()}`;
		const session = { ...checkout(customer, "", promo), customer_details: null };
		const invoice = {
			id: `in_${uid()}`,
			object: "invoice",
			customer,
			amount_paid: 5000,
			currency: "usd",
			discounts: [{ promotion_code: promo }],
		};
		const answers = await Promise.all([run("checkout.session.completed", session), run("invoice.paid", invoice)]);
		expect(await usersOfCustomer(app.appid, customer)).toHaveLength(1);
		// The event that did not claim the customer is retried (the queue brings it back) and then finds its user.
		expect(answers.filter((a) => a === "retry").length).toBeLessThanOrEqual(1);
		expect(await counts()).toMatchObject({ "promotion_code:attributed": 1 });
	});

	it("a customer whose user is gone (its claim long done) becomes a new user again, never retried for ever", async () => {
		const { app, register, run } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const promo = await promotionCode(referrer.referralcode);
		const customer = `cus_${uid()}`;
		// An earlier event claimed the customer an hour ago and made a user, since erased (its customer id cleared).
		await env.DB.prepare("INSERT INTO stripe_customer_claims (appid, customer, eventid, claimed_at) VALUES (?, ?, ?, ?)")
			.bind(app.appid, customer, "evt_long_ago", Date.now() - 3_600_000)
			.run();
		expect(await run("checkout.session.completed", { ...checkout(customer, "", promo), customer_details: null })).toBe("ack");
		expect(await usersOfCustomer(app.appid, customer)).toEqual([{ email: null, referrer_userid: expect.any(Number) }]);
	});
});
