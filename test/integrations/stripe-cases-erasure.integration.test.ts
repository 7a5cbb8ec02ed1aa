import { env } from "cloudflare:workers";
import type Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { claimCustomer } from "../../src/db/stripe-identity";
import { type StripeEventMessage, stripeObjectSchema } from "../../src/integrations/stripe/events";
import { runStripeEvent } from "../../src/integrations/stripe/handle";
import { admin, createApp } from "../support/api";

/**
 * Issue 47's review: the Stripe cases shown to the operator (migration 0042,
 * the app's `stripe.cases`) name a user and a Stripe customer, and the
 * user's erasure left them. Erasing the user deletes the cases naming it or
 * its customer; the others stay.
 */

const RECEIVER = env.WEBHOOK_RECEIVER_URL;
const uid = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

/** A paid checkout session (Stripe.Checkout.Session) of `customer`, with the email the payer typed and no discount. */
function checkout(customer: string, email: string): Record<string, unknown> {
	const session: Pick<Stripe.Checkout.Session, "id" | "object" | "amount_total" | "currency" | "payment_status"> & {
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
	};
	return session;
}

async function connectedApp() {
	const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "USD" }] });
	const stripe = { secretkey: "sk_test_cases0000", webhooksecret: "whsec_casesTestSecret00", apiurl: `${RECEIVER}/stripe` };
	expect((await admin("PATCH", `/apps/${app.appid}`, { stripe })).status).toBe(200);
	const register = async (email: string, extra: Record<string, unknown> = {}) => {
		const res = await app.api("register", { email, ...extra });
		expect(res.status).toBe(200);
		return res.body as { userkey: string };
	};
	/** Runs a stored event as the Stripe consumer does. */
	const pay = async (customer: string, email: string) => {
		const work: StripeEventMessage = {
			appid: app.appid,
			eventid: `evt_${uid()}`,
			type: "checkout.session.completed",
			object: stripeObjectSchema.parse(checkout(customer, email)),
		};
		expect(await runStripeEvent(env, work, () => undefined)).toBe("ack");
		return work.eventid;
	};
	type Case = { eventid: string; customer: string | null; userkey: string | null };
	const cases = async () => (await admin("GET", `/apps/${app.appid}`)).body.stripe.cases as Case[];
	const storedCases = async () =>
		(await env.DB.prepare("SELECT * FROM stripe_cases WHERE appid = ?").bind(app.appid).all<Record<string, unknown>>()).results;
	return { app, register, pay, cases, storedCases };
}

describe("a user's erasure deletes the Stripe cases naming it or its customer", () => {
	it("nothing of the erased person is left in the cases, through the admin API or in D1; other people's cases stay", async () => {
		const { app, register, pay, cases, storedCases } = await connectedApp();
		// Ann: a stranger's payment typed her email (unlinked_email, naming her userkey and the stranger's customer).
		const annEmail = `ann.${uid()}@example.com`;
		const ann = await register(annEmail);
		const stranger = `cus_${uid()}`;
		const annCase = await pay(stranger, annEmail);
		// Bob: his own payment typed Cy's email before the product linked his customer: a case naming Cy and Bob's
		// customer; the product then links it (the fix docs/stripe.md gives), so the case names Bob's customer.
		const bobCustomer = `cus_${uid()}`;
		const bob = await register(`bob.${uid()}@example.com`);
		const cyEmail = `cy.${uid()}@example.com`;
		await register(cyEmail);
		const bobCase = await pay(bobCustomer, cyEmail);
		expect((await app.api("updateuser", { userkey: bob.userkey, paymentcustomerid: bobCustomer })).status).toBe(200);
		// Dee: not erased, her case stays.
		const deeEmail = `dee.${uid()}@example.com`;
		const dee = await register(deeEmail);
		const deeCase = await pay(`cus_${uid()}`, deeEmail);
		expect((await cases()).map((c) => c.eventid).sort()).toEqual([annCase, bobCase, deeCase].sort());
		// A claim on Bob's customer (as a promotion-code payment of a new customer leaves it), and one on Dee's.
		const deeCustomer = `cus_${uid()}`;
		expect(await claimCustomer(env.DB, app.appid, bobCustomer, "evt_claim_bob", Date.now())).toBe(true);
		expect(await claimCustomer(env.DB, app.appid, deeCustomer, "evt_claim_dee", Date.now())).toBe(true);

		for (const erased of [ann, bob]) expect((await admin("DELETE", `/apps/${app.appid}/users/${erased.userkey}`)).status).toBe(200);

		const left = JSON.stringify([await cases(), await storedCases()]);
		for (const trace of [ann.userkey, annEmail, stranger, annCase, bob.userkey, bobCustomer, bobCase]) expect(left).not.toContain(trace);
		expect(await cases()).toEqual([expect.objectContaining({ eventid: deeCase, userkey: dee.userkey })]);
		const claims = await env.DB.prepare("SELECT customer FROM stripe_customer_claims WHERE appid = ?").bind(app.appid).all();
		expect(claims.results).toEqual([{ customer: deeCustomer }]);
		// The tally stays: three payments paid nobody.
		expect((await admin("GET", `/apps/${app.appid}`)).body.stripe.events).toMatchObject({ unlinked_email: 3 });
		// Erasing again (an idempotent retry) changes nothing more.
		expect((await admin("DELETE", `/apps/${app.appid}/users/${ann.userkey}`)).status).toBe(200);
		expect(await storedCases()).toHaveLength(1);
	});

	it("a dispute that arrives after the payer's erasure opens a case naming neither the payer nor its customer", async () => {
		const { app, register, cases } = await connectedApp();
		const referrer = (await app.api("register", { email: `ref.${uid()}@example.com` })).body as { userkey: string; referralcode: string };
		const customer = `cus_${uid()}`;
		const friend = await register(`eve.${uid()}@example.com`, { referrercode: referrer.referralcode, paymentcustomerid: customer });
		const intent = `pi_${uid()}`;
		const run = async (type: string, object: Record<string, unknown>) => {
			const work: StripeEventMessage = { appid: app.appid, eventid: `evt_${uid()}`, type, object: stripeObjectSchema.parse(object) };
			expect(await runStripeEvent(env, work, () => undefined)).toBe("ack");
			return work.eventid;
		};
		// Eve pays as herself (her customer linked by the product): her conversion, linked to the payment.
		await run("checkout.session.completed", { ...checkout(customer, "typed@example.com"), payment_intent: intent });
		const linked = await env.DB.prepare("SELECT customid FROM stripe_links WHERE appid = ? AND payment_intent = ?")
			.bind(app.appid, intent)
			.first();
		expect(linked).not.toBeNull();
		expect((await admin("DELETE", `/apps/${app.appid}/users/${friend.userkey}`)).status).toBe(200);
		const dispute = {
			id: `dp_${uid()}`,
			object: "dispute",
			charge: `ch_${uid()}`,
			payment_intent: intent,
			customer,
			amount: 5000,
			currency: "usd",
		};
		const opened = await run("charge.dispute.created", { ...dispute, status: "needs_response" });
		const stored = await env.DB.prepare("SELECT * FROM stripe_cases WHERE appid = ? AND eventid = ?").bind(app.appid, opened).all();
		// The case is there for the operator, with the referrer whose rewards the dispute holds, and nothing of Eve.
		expect(stored.results).toEqual([expect.objectContaining({ kind: "dispute_opened", userkey: referrer.userkey, customer: null })]);
		const shown = JSON.stringify(await cases());
		for (const trace of [customer, friend.userkey]) expect(shown).not.toContain(trace);
	});
});
