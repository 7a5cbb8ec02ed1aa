import { z } from "zod";
import { nowIso } from "../domain/dates";
import { type AuditEntry, runAudited } from "./audit";

/** Stripe connections, customers, payment links and event counts (migration 0017, docs/stripe.md). */

const configRow = z.object({
	appid: z.string(),
	secretkey_box: z.string(),
	webhooksecret_box: z.string(),
	secretkey_last4: z.string(),
	eventname: z.string(),
	apiurl: z.string().nullable(),
});
export type StripeConfigRow = z.output<typeof configRow>;

export async function findStripeConfig(db: D1Database, appid: string): Promise<StripeConfigRow | null> {
	const row = await db
		.prepare("SELECT appid, secretkey_box, webhooksecret_box, secretkey_last4, eventname, apiurl FROM app_stripe WHERE appid = ?")
		.bind(appid)
		.first();
	return row ? configRow.parse(row) : null;
}

/** Connects (or reconnects) the app, with the audit entry of the change. */
export async function saveStripeConfig(db: D1Database, row: StripeConfigRow, audit: AuditEntry): Promise<void> {
	const upsert = db
		.prepare(
			`INSERT INTO app_stripe (appid, secretkey_box, webhooksecret_box, secretkey_last4, eventname, apiurl, updated_at)
			 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM apps WHERE appid = ?1)
			 ON CONFLICT (appid) DO UPDATE SET secretkey_box = excluded.secretkey_box, webhooksecret_box = excluded.webhooksecret_box,
			   secretkey_last4 = excluded.secretkey_last4, eventname = excluded.eventname, apiurl = excluded.apiurl, updated_at = excluded.updated_at`,
		)
		.bind(row.appid, row.secretkey_box, row.webhooksecret_box, row.secretkey_last4, row.eventname, row.apiurl, nowIso());
	await runAudited(db, upsert, audit);
}

export async function deleteStripeConfig(db: D1Database, appid: string, audit: AuditEntry): Promise<void> {
	await runAudited(db, db.prepare("DELETE FROM app_stripe WHERE appid = ?").bind(appid), audit);
}

const customerRow = z.object({
	userkey: z.string(),
	campaignid: z.number(),
	erased_at: z.string().nullable(),
	referrer_userid: z.number().nullable(),
});

/** The app's user paying as Stripe customer `customer` (users_app_paymentcustomer), or null. */
export async function userOfCustomer(db: D1Database, appid: string, customer: string): Promise<z.output<typeof customerRow> | null> {
	const row = await db
		.prepare("SELECT userkey, campaignid, erased_at, referrer_userid FROM users WHERE appid = ? AND paymentcustomerid = ? LIMIT 1")
		.bind(appid, customer)
		.first();
	return row ? customerRow.parse(row) : null;
}

/** The user's Stripe customer id, or null (the users' unique userkey). */
export async function paymentCustomerOf(db: D1Database, appid: string, userkey: string): Promise<string | null> {
	const row = await db
		.prepare("SELECT paymentcustomerid FROM users WHERE userkey = ? AND appid = ?")
		.bind(userkey, appid)
		.first<{ paymentcustomerid: string | null }>();
	return row?.paymentcustomerid || null;
}

export interface StripeLink {
	customid: string;
	invoice: string | null;
	payment_intent: string | null;
	charge: string | null;
	checkout_session: string | null;
	currency: string;
	amount_minor: number;
}

/** Records the ids of a conversion's payment; a link already there gains the ids it lacked. */
export async function saveStripeLink(db: D1Database, appid: string, link: StripeLink): Promise<void> {
	await db
		.prepare(
			`INSERT INTO stripe_links (appid, customid, invoice, payment_intent, charge, checkout_session, currency, amount_minor, created_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (appid, customid) DO UPDATE SET invoice = COALESCE(invoice, excluded.invoice),
			   payment_intent = COALESCE(payment_intent, excluded.payment_intent), charge = COALESCE(charge, excluded.charge),
			   checkout_session = COALESCE(checkout_session, excluded.checkout_session)`,
		)
		.bind(
			appid,
			link.customid,
			link.invoice,
			link.payment_intent,
			link.charge,
			link.checkout_session,
			link.currency,
			link.amount_minor,
			nowIso(),
		)
		.run();
}

const linkRow = z.object({ customid: z.string(), currency: z.string(), amount_minor: z.number(), refunded_minor: z.number() });
export type FoundLink = z.output<typeof linkRow>;

/** The conversion a refunded charge belongs to: by the charge, else its payment intent, else its invoice (each on its index). */
export async function findStripeLink(
	db: D1Database,
	appid: string,
	ids: { charge: string | null; payment_intent: string | null; invoice: string | null },
): Promise<FoundLink | null> {
	for (const column of ["charge", "payment_intent", "invoice"] as const) {
		const value = ids[column];
		if (!value) continue;
		const row = await db
			.prepare(`SELECT customid, currency, amount_minor, refunded_minor FROM stripe_links WHERE appid = ? AND ${column} = ?`)
			.bind(appid, value)
			.first();
		if (row) return linkRow.parse(row);
	}
	return null;
}

/** Raises what refunds took back; never lowers it (an older event arriving late changes nothing). */
export async function raiseRefunded(db: D1Database, appid: string, customid: string, refundedMinor: number): Promise<void> {
	await db
		.prepare("UPDATE stripe_links SET refunded_minor = ? WHERE appid = ? AND customid = ? AND refunded_minor < ?")
		.bind(refundedMinor, appid, customid, refundedMinor)
		.run();
}

/** Counts an event answered and not stored (or its outcome). */
export async function countStripeEvent(db: D1Database, appid: string, outcome: string): Promise<void> {
	await db
		.prepare("INSERT INTO stripe_event_counts (appid, outcome, n) VALUES (?, ?, 1) ON CONFLICT (appid, outcome) DO UPDATE SET n = n + 1")
		.bind(appid, outcome)
		.run();
}

/** The app's event counts by outcome (at most a handful of rows per app). */
export async function stripeEventCounts(db: D1Database, appid: string): Promise<Record<string, number>> {
	const result = await db
		.prepare("SELECT outcome, n FROM stripe_event_counts WHERE appid = ?")
		.bind(appid)
		.all<{ outcome: string; n: number }>();
	return Object.fromEntries(result.results.map((r) => [r.outcome, r.n]));
}
