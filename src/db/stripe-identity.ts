import { z } from "zod";

/**
 * How a Stripe event finds its user (migration 0042, docs/stripe.md "How an
 * event finds its user"): the claim of a new customer by the event that
 * creates its user, and the cases shown to the operator.
 */

const claimRow = z.object({ eventid: z.string() });

/**
 * A claim older than this was done long ago (creating a user takes a
 * moment), or its event crashed and was retried meanwhile: another event may
 * take it over. The customer is unknown again only when its user is gone
 * (erased, or the product gave it another customer id), and a new payment
 * then makes a new user instead of being retried for ever.
 */
export const CLAIM_STALE_MS = 10 * 60_000;

/**
 * Claims the customer for the event `eventid` (the first claim stays, unless
 * it is stale): true when this event holds the claim, so it creates the
 * customer's user; false when another event does (this one is retried and
 * then finds the user).
 */
export async function claimCustomer(db: D1Database, appid: string, customer: string, eventid: string, now: number): Promise<boolean> {
	const [, row] = await db.batch([
		db
			.prepare(
				`INSERT INTO stripe_customer_claims (appid, customer, eventid, claimed_at) VALUES (?1, ?2, ?3, ?4)
				 ON CONFLICT (appid, customer) DO UPDATE SET eventid = excluded.eventid, claimed_at = excluded.claimed_at
				 WHERE stripe_customer_claims.claimed_at < ?5`,
			)
			.bind(appid, customer, eventid, now, now - CLAIM_STALE_MS),
		db.prepare("SELECT eventid FROM stripe_customer_claims WHERE appid = ? AND customer = ?").bind(appid, customer),
	]);
	return claimRow.parse(row?.results[0]).eventid === eventid;
}

export interface StripeCase {
	eventid: string;
	kind: string;
	customer: string | null;
	userkey: string | null;
	detail: string | null;
	at: number;
}
const caseRow = z.object({
	eventid: z.string(),
	kind: z.string(),
	customer: z.string().nullable(),
	userkey: z.string().nullable(),
	detail: z.string().nullable(),
	at: z.number(),
});

/**
 * Records a case once per event and kind (a redelivery keeps the first).
 * `payer`: the user who made the payment, when the event names one; if that
 * user is erased, the case names neither it nor the customer (the erasure
 * deleted such cases already, docs/privacy.md; a dispute can arrive after it).
 * Checked in the insert itself, so an erasure is seen whichever comes first.
 */
export async function recordStripeCase(db: D1Database, appid: string, c: StripeCase & { payer?: string | null }): Promise<void> {
	await db
		.prepare(
			`INSERT INTO stripe_cases (appid, eventid, kind, customer, userkey, detail, at)
			 SELECT ?1, ?2, ?3, CASE WHEN p.erased THEN NULL ELSE ?4 END, CASE WHEN p.erased AND ?5 IS ?8 THEN NULL ELSE ?5 END, ?6, ?7
			 FROM (SELECT EXISTS (SELECT 1 FROM users WHERE userkey = ?8 AND appid = ?1 AND erased_at IS NOT NULL) AS erased) p WHERE true
			 ON CONFLICT (appid, eventid, kind) DO NOTHING`,
		)
		.bind(appid, c.eventid, c.kind, c.customer, c.userkey, c.detail, c.at, c.payer ?? null)
		.run();
}

/** The app's most recent cases, newest first (bounded, on `stripe_cases_recent`). */
export async function recentStripeCases(db: D1Database, appid: string, limit = 20): Promise<StripeCase[]> {
	const result = await db
		.prepare("SELECT eventid, kind, customer, userkey, detail, at FROM stripe_cases WHERE appid = ? ORDER BY at DESC LIMIT ?")
		.bind(appid, limit)
		.all();
	return result.results.map((r) => caseRow.parse(r));
}

/**
 * Deletes the cases of an erased person (db/privacy.ts, in the erasure's
 * batch): those naming its userkey (e.g. `unlinked_email`: a payment carried
 * its email) and, when it had one, those naming its Stripe customer (e.g. a
 * dispute of its payment, named under its referrer). Deleted, not
 * anonymised: a case without whom and which customer is nothing an operator
 * can act on, and its event id still leads to the person's payment in
 * Stripe; the app's counts (`stripe_event_counts`) keep the tally. A seek of
 * stripe_cases_user or stripe_cases_customer each (migration 0047). Also the
 * claim on its customer, if one is left (a user made from a promotion code:
 * claimCustomer), by its primary key: it names the customer after the user's
 * row no longer does.
 */
export function deleteStripeCasesOf(
	db: D1Database,
	appid: string,
	person: { userkey: string; customer: string | null },
): D1PreparedStatement[] {
	return [
		db.prepare("DELETE FROM stripe_cases WHERE appid = ? AND userkey = ?").bind(appid, person.userkey),
		...(person.customer
			? [
					db.prepare("DELETE FROM stripe_cases WHERE appid = ? AND customer = ?").bind(appid, person.customer),
					db.prepare("DELETE FROM stripe_customer_claims WHERE appid = ? AND customer = ?").bind(appid, person.customer),
				]
			: []),
	];
}
