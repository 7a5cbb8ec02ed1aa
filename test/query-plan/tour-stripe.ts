import { env } from "cloudflare:workers";
import { stripeObjectSchema } from "../../src/integrations/stripe/events";
import { runStripeEvent } from "../../src/integrations/stripe/handle";
import { runPayout } from "../../src/integrations/stripe/payouts";
import { redriveStuckPayouts, sweepStripeInbox } from "../../src/integrations/stripe/sweep";
import { appKeyAudit } from "../../src/ledger/audit";
import { ledgerFor } from "../../src/ledger/stub";
import { freshLedger, grantOf } from "../ledger/support";
import { admin, createApp } from "../support/api";

/**
 * The query-plan tour of issue 23: an app connected to Stripe (its view,
 * its event counts), a signed event at the endpoint, a payment and a refund
 * mapped by the consumer's code, a payout of an approved Stripe reward and a
 * retry, and the disconnection. Stripe's API is the test receiver here: only
 * the statements matter, not what Stripe answers.
 */

async function signature(secret: string, payload: string): Promise<string> {
	const t = Math.floor(Date.now() / 1000);
	const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
	const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${t}.${payload}`)));
	return `t=${t},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export async function stripeTour(request: (path: string, init?: RequestInit) => Promise<Response>): Promise<void> {
	const app = await createApp({
		distribution: "Stripe",
		rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
	});
	const webhooksecret = "whsec_planTourSecret0000";
	const connect = { secretkey: "sk_test_planTour0000", webhooksecret, apiurl: `${env.WEBHOOK_RECEIVER_URL}/stripe-plan` };
	if ((await admin("PATCH", `/apps/${app.appid}`, { stripe: connect })).status !== 200) throw new Error("stripe connect");
	await admin("GET", `/apps/${app.appid}`);
	const referrer = (await app.api("register", { email: "plan.ref@x.com", paymentcustomerid: "cus_plan_ref" })).body;
	const friend = (
		await app.api("register", { email: "plan.fr@x.com", paymentcustomerid: "cus_plan_fr", referrercode: referrer.referralcode })
	).body;
	const payload = JSON.stringify({ id: "evt_plan", object: "event", type: "customer.created", data: { object: { id: "cus_x" } } });
	const res = await request(`/integrations/stripe/${app.appid}`, {
		method: "POST",
		headers: { "stripe-signature": await signature(webhooksecret, payload) },
		body: payload,
	});
	if (res.status !== 200) throw new Error(`stripe endpoint: ${res.status}`);
	// A handled type is stored in the inbox before the answer.
	const paidPayload = JSON.stringify({
		id: "evt_plan_inbox",
		object: "event",
		type: "invoice.paid",
		data: { object: { id: "in_plan_inbox", customer: "cus_nobody", amount_paid: 100, currency: "usd" } },
	});
	const stored = await request(`/integrations/stripe/${app.appid}`, {
		method: "POST",
		headers: { "stripe-signature": await signature(webhooksecret, paidPayload) },
		body: paidPayload,
	});
	if (stored.status !== 200) throw new Error(`stripe endpoint: ${stored.status}`);
	const waitUntil = () => undefined;
	const object = {
		id: "in_plan",
		customer: "cus_plan_fr",
		currency: "usd",
		amount_paid: 5000,
		charge: "ch_plan",
		payment_intent: "pi_plan",
		invoice: null,
	};
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_1", type: "invoice.paid", object }, waitUntil);
	const refund = {
		id: "ch_plan",
		customer: "cus_plan_fr",
		currency: "usd",
		amount: 5000,
		amount_refunded: 1000,
		payment_intent: "pi_plan",
		invoice: null,
		charge: null,
	};
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_2", type: "charge.refunded", object: refund }, waitUntil);
	// A refund of a payment not seen yet waits for it.
	const early = { ...refund, id: "ch_plan_early", payment_intent: "pi_plan_early" };
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_3", type: "charge.refunded", object: early }, waitUntil);
	const ledger = ledgerFor(env, app.appid, referrer.userkey);
	await ledger.flush();
	await runPayout(env, { appid: app.appid, userkey: referrer.userkey, seq: 1, n: 1 }).catch(() => "retry");
	await runPayout(env, { appid: app.appid, userkey: referrer.userkey, seq: 1, kind: "credit" }).catch(() => "retry");
	await admin("POST", `/apps/${app.appid}/users/${referrer.userkey}/payouts/retry`);
	await ledger.payoutPaid(1, 1, "cbtxn_plan", "req_plan");
	// A larger refund after the payout: a debit record, refused here.
	const more = { ...refund, amount_refunded: 2000 };
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_4", type: "charge.refunded", object: more }, waitUntil);
	await ledger.payoutRefused(1, 2, { code: "resource_missing", requestId: "req_plan" });
	// The operator's retry books it again (a new record, due), and the re-drive sends what is due.
	await admin("POST", `/apps/${app.appid}/users/${referrer.userkey}/payouts/retry`);
	await ledger.redrivePayouts(0);
	// Issue 47: that payout sent and unanswered past the key lifetime (0 here) becomes unknown, is looked up again,
	// then resolved from Stripe's record.
	const last = (await ledger.payouts(1)).at(-1);
	if (last) {
		await ledger.claimPayout(1, last.n, "cus_plan", true);
		await ledger.redrivePayouts(0, 0);
		await ledger.redrivePayouts(0);
		await ledger.resolvePayout(1, last.n, { undecided: "plan" });
		await ledger.resolvePayout(1, last.n, { applied: true, stripeId: "cbtxn_plan_2" });
	}
	await redriveStuckPayouts(env, Date.now() + 3_600_000);
	await sweepStripeInbox(env, Date.now() + 3_600_000);
	await ledger.flush();
	// Chargebacks (issue 47): a dispute of the payment opened (its rewards held), then won (restored); another
	// closed lost before its open (reversed as a full refund, the late open holds nothing).
	const dispute = stripeObjectSchema.parse({
		id: "dp_plan",
		currency: "usd",
		amount: 5000,
		charge: "ch_plan",
		payment_intent: "pi_plan",
		status: "needs_response",
	});
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_dp_1", type: "charge.dispute.created", object: dispute }, waitUntil);
	const won = { ...dispute, status: "won" };
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_dp_2", type: "charge.dispute.closed", object: won }, waitUntil);
	const lost = { ...dispute, id: "dp_plan_lost", status: "lost" };
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_dp_3", type: "charge.dispute.closed", object: lost }, waitUntil);
	await runStripeEvent(
		env,
		{ appid: app.appid, eventid: "evt_plan_dp_4", type: "charge.dispute.created", object: { ...lost, status: "needs_response" } },
		waitUntil,
	);
	// A hold of an Approved Stripe reward withdraws its credit not sent yet (ledger/dispute-holds.ts). Asked without the
	// event's user, as a Worker from before ledger schema step 17 asks: the event's rewards read by customid alone.
	const holder = freshLedger(app.appid);
	await holder.stub.grant(app.appid, holder.userkey, [grantOf({ customid: "plan_hold", amount: 10, rewardtype: "Stripe" })]);
	const holdAudit = { ...appKeyAudit(app.apikey), entryid: "plan_hold" };
	await holder.stub.disputePhase(app.appid, holder.userkey, {
		customid: "plan_hold",
		dispute: "dp_plan_hold",
		phase: "hold",
		audit: holdAudit,
	});
	// Promotion codes at checkout (issue 34): a referrer's code read from Stripe once and kept; a new customer becomes a
	// referred user (claimed once), and a customer whose email is a user's is linked to nobody: a case (issue 47).
	const promo = `promo_plan_${crypto.randomUUID().slice(0, 8)}`;
	const promotion = JSON.stringify({ id: promo, object: "promotion_code", code: referrer.referralcode.toLowerCase() });
	await fetch(`${env.WEBHOOK_RECEIVER_URL}/__mode/promotion_codes/${promo}`, {
		method: "POST",
		body: JSON.stringify({ default: { status: 200, body: promotion } }),
	});
	const session = stripeObjectSchema.parse({
		id: "cs_plan_promo",
		customer: "cus_plan_promo",
		customer_details: { email: "plan.promo@x.com" },
		amount_total: 3000,
		currency: "usd",
		payment_status: "paid",
		discounts: [{ coupon: "co_plan", promotion_code: promo }],
	});
	await runStripeEvent(
		env,
		{ appid: app.appid, eventid: "evt_plan_promo_1", type: "checkout.session.completed", object: session },
		waitUntil,
	);
	await app.api("register", { email: "plan.known@x.com" });
	const invoice = stripeObjectSchema.parse({
		id: "in_plan_promo",
		customer: "cus_plan_known",
		customer_email: "plan.known@x.com",
		amount_paid: 3000,
		currency: "usd",
		discounts: [{ id: "di_plan", object: "discount", promotion_code: promo }],
	});
	await runStripeEvent(env, { appid: app.appid, eventid: "evt_plan_promo_2", type: "invoice.paid", object: invoice }, waitUntil);
	await admin("GET", `/apps/${app.appid}`);
	await app.api("updateuser", { userkey: friend.userkey, paymentcustomerid: "cus_plan_fr2" });
	// The erasure of a user with a Stripe customer deletes the cases naming that customer too (issue 47's review).
	await admin("DELETE", `/apps/${app.appid}/users/${friend.userkey}`);
	await admin("PATCH", `/apps/${app.appid}`, { stripe: null });
}
