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
		// Each friend's rewards for the referrer, as amounts.
		return Object.fromEntries(
			friends.filter((f) => f.earnedrewards.length > 0).map((f) => [f.email, f.earnedrewards.map((r) => r.reward)]),
		);
	};
	return { app, register, run, counts, earned };
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
	it("attributes a new customer to the code's owner (ignoring case), creates its user, and the referrer earns", async () => {
		const { register, run, counts, earned } = await connectedApp();
		const referrer = await register(`ref.${uid()}@example.com`);
		const promo = await promotionCode(referrer.referralcode.toLowerCase());
		const email = `new.${uid()}@example.com`;
		expect(await run("checkout.session.completed", checkout(`cus_${uid()}`, email, promo))).toBe("ack");
		const friend = await register(email);
		expect(friend).toMatchObject({ hasreferrer: true, referrercode: referrer.referralcode });
		expect(await earned(referrer.userkey)).toEqual({ [email]: ["10"] });
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
		const { register, run, counts, earned } = await connectedApp();
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
		const emails = [`a.${uid()}@example.com`, `b.${uid()}@example.com`];
		for (const e of emails) expect(await run("checkout.session.completed", checkout(`cus_${uid()}`, e, promo))).toBe("ack");
		expect(await stripeReads(`promotion_codes/${promo}`)).toBe(1);
		expect(await earned(other.userkey)).toEqual({ [emails[0] as string]: ["10"], [emails[1] as string]: ["10"] });
		expect(await counts()).toMatchObject({ "promotion_code:attributed": 2, converted: 3 });
	});
});
