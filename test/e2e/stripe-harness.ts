import Stripe from "stripe";
import { expect } from "vitest";
import { startService } from "../../scripts/dev-service.mjs";
import { type FakeStripe, type StripeLimit, startFakeStripe } from "./fake-stripe";
import { serviceClient } from "./service-client";
import { waitFor } from "./wait";

/**
 * A `wrangler dev` service with one app connected to a local fake Stripe
 * (fake-stripe.ts) and a 10 % Stripe campaign, and the calls the Stripe e2e
 * tests share: events signed the way Stripe signs them (the official
 * library), invoice and refund payloads, a referral.
 */

export const WEBHOOK_SECRET = "whsec_e2eHarnessSigningSecret012345";
const stripeLib = new Stripe("sk_test_unused");
type Service = Awaited<ReturnType<typeof startService>>;

export interface Harness {
	service: Service;
	fake: FakeStripe;
	appid: string;
	api(operation: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, any> }>;
	admin: ReturnType<typeof serviceClient>["admin"];
	/** Posts a signed event; answers the status (0 when the connection failed: the service died). */
	deliver(event: Record<string, unknown>): Promise<number>;
	referral(name: string): Promise<{ customer: string; friendCustomer: string; rewardid: string; referrerkey: string }>;
	/** checkrewardstatus's answer, with the reward's view from the friends list (`reward`, `reversedamount`). */
	status(rewarddtlid: string): Promise<Record<string, any>>;
	until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
	/** Runs the cron jobs once (wrangler dev runs them only on request, with --test-scheduled). */
	sweep(): Promise<void>;
	/** Waits until Stripe's net for `customer` is `owed` (minor units), running the sweeps; every key went out with one amount. */
	settlesAt(customer: string, owed: number): Promise<void>;
	counts(): Promise<Record<string, number>>;
	restart(): Promise<void>;
	stop(): Promise<void>;
}

const VARS = { STRIPE_REDRIVE_AFTER_MS: "3000", STRIPE_INBOX_RESEND_AFTER_MS: "3000" };

export async function startHarness(
	name: string,
	campaign: Record<string, unknown> = {},
	settings: { vars?: Record<string, string>; limit?: StripeLimit } = {},
): Promise<Harness> {
	const options = { name, vars: { ...VARS, ...settings.vars }, args: ["--test-scheduled"] };
	let [service, fake] = await Promise.all([startService(options), startFakeStripe(undefined, settings.limit)]);
	const client = serviceClient(() => service);
	const created = await client.admin("POST", "/apps", { name, landingurl: "https://shop.example.com/", webhookurl: `${fake.url}/hooks` });
	expect(created.status).toBe(201);
	const appid: string = created.body.appid;
	const creds = { apikey: created.body.apikey, privatekey: created.body.privatekey };
	const made = await client.admin("POST", `/apps/${appid}/campaigns`, {
		campaignname: "10% of the first payment",
		distribution: "Stripe",
		currency: "USD",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
		...campaign,
	});
	expect(made.status).toBe(201);
	const connected = await client.admin("PATCH", `/apps/${appid}`, {
		stripe: { secretkey: "sk_test_e2eHarness4242", webhooksecret: WEBHOOK_SECRET, apiurl: fake.url },
	});
	expect(connected.status).toBe(200);
	const api = (operation: string, body: Record<string, unknown>) => client.api(operation, { ...creds, ...body });
	const context = () => `${service.logs().slice(-3000)}\nfake Stripe calls: ${JSON.stringify(fake.calls.slice(-6))}`;
	const until = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000) =>
		waitFor(what, probe, { timeoutMs, intervalMs: 300, context });
	const sweep = async () => {
		await fetch(`${service.base}/__scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(() => undefined);
	};
	const harness: Harness = {
		service,
		fake,
		appid,
		api,
		admin: client.admin,
		async deliver(event) {
			const payload = JSON.stringify(event);
			const signature = stripeLib.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
			try {
				const res = await fetch(`${service.base}/integrations/stripe/${appid}`, {
					method: "POST",
					headers: { "content-type": "application/json", "stripe-signature": signature },
					body: payload,
				});
				await res.text();
				return res.status;
			} catch {
				return 0;
			}
		},
		async referral(who) {
			const customer = `cus_${who}`;
			const referrer = (await api("register", { email: `${who}@example.com`, paymentcustomerid: customer })).body;
			const friend = await api("register", {
				email: `${who}.friend@example.com`,
				paymentcustomerid: `cus_friend_${who}`,
				referrercode: referrer.referralcode,
			});
			expect(friend.status).toBe(200);
			return { customer, friendCustomer: `cus_friend_${who}`, rewardid: `${referrer.userkey}-1`, referrerkey: referrer.userkey };
		},
		async status(rewarddtlid) {
			const checked = (await api("checkrewardstatus", { rewarddtlid })).body;
			const userkey = rewarddtlid.replace(/-\d+$/, "");
			const friends = (await api("getfriendsandrewards", { userkey })).body.friends ?? [];
			const view = friends
				.flatMap((f: { earnedrewards: Record<string, any>[] }) => f.earnedrewards)
				.find((r: Record<string, any>) => r.rewarddtlid === rewarddtlid);
			return { ...view, ...checked };
		},
		until,
		sweep,
		async settlesAt(customer, owed) {
			await until(`Stripe's net for ${customer} at ${owed}`, async () => {
				await sweep();
				return fake.net(customer) === owed ? true : undefined;
			}).catch((error: Error) => {
				throw new Error(`Stripe's net for ${customer} is ${fake.net(customer)}, owed ${owed}. ${error.message}`);
			});
			for (const [key, amounts] of fake.keyAmounts) expect({ key, amounts: [...amounts] }).toEqual({ key, amounts: [expect.any(Number)] });
		},
		counts: async () => (await client.admin("GET", `/apps/${appid}`)).body.stripe.events as Record<string, number>,
		async restart() {
			await service.kill();
			service = await startService({ ...options, persistTo: service.persist });
			harness.service = service;
		},
		async stop() {
			await service?.stop();
			await fake?.close();
		},
	};
	return harness;
}

let nextInvoice = 1;

/** The pinned API version's invoice as the library types it: its payments listed under `payments` (Stripe.InvoicePayment). */
type PinnedInvoice = Pick<Stripe.Invoice, "id" | "object" | "amount_paid" | "currency"> & {
	customer: string;
	payments: Pick<Stripe.ApiList<Stripe.InvoicePayment>, "object" | "has_more" | "url"> & {
		data: Pick<Stripe.InvoicePayment, "id" | "object" | "payment">[];
	};
};
/** The previous shape: the invoice names its charge and payment intent (gone from the pinned version's Stripe.Invoice). */
type LegacyInvoice = Pick<Stripe.Invoice, "id" | "object" | "amount_paid" | "currency"> & {
	customer: string;
	charge: string;
	payment_intent: string;
};

/** An `invoice.paid` event. `shape`: `pinned` lists the payment under `invoice.payments` (the library's API version), `legacy` names charge and payment intent on the invoice. */
export function invoicePaid(customer: string, amountPaid: number, { currency = "usd", shape = "legacy" as "legacy" | "pinned" } = {}) {
	const n = `${Date.now().toString(36)}${nextInvoice++}`;
	const base = { id: `in_${n}`, object: "invoice" as const, customer, amount_paid: amountPaid, currency };
	const object: PinnedInvoice | LegacyInvoice =
		shape === "legacy"
			? { ...base, charge: `ch_${n}`, payment_intent: `pi_${n}` }
			: {
					...base,
					// Stripe.Invoice of the pinned API version: payments is a list of Stripe.InvoicePayment.
					payments: {
						object: "list",
						data: [{ id: `inpay_${n}`, object: "invoice_payment", payment: { type: "payment_intent", payment_intent: `pi_${n}` } }],
						has_more: false,
						url: `/v1/invoice_payments?invoice=in_${n}`,
					},
				};
	return {
		id: `evt_inv_${n}`,
		object: "event",
		type: "invoice.paid",
		created: Math.floor(Date.now() / 1000),
		data: { object },
		charge: `ch_${n}`,
		intent: `pi_${n}`,
	};
}

/** A `charge.refunded` event of the invoice's payment, with the charge's refunded total so far. */
export function chargeRefunded(paid: ReturnType<typeof invoicePaid>, amountRefunded: number) {
	const o = paid.data.object;
	const object = {
		id: paid.charge,
		object: "charge",
		customer: o.customer,
		amount: o.amount_paid,
		amount_refunded: amountRefunded,
		currency: o.currency,
		payment_intent: paid.intent,
	} satisfies Pick<Stripe.Charge, "id" | "object" | "amount" | "amount_refunded" | "currency"> & {
		customer: string;
		payment_intent: string;
	};
	return {
		id: `evt_refund_${paid.charge}_${amountRefunded}`,
		object: "event",
		type: "charge.refunded",
		created: Math.floor(Date.now() / 1000),
		data: { object },
	};
}
