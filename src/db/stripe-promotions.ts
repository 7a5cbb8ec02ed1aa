import { z } from "zod";
import { nowIso } from "../domain/dates";

/**
 * Promotion codes at checkout (migration 0028, docs/stripe.md "Promotion
 * codes"): the customer-facing code of each Stripe promotion code an app's
 * payments carried, read once from Stripe and kept (Stripe never changes a
 * promotion code's `code`), and the link of a Stripe customer to the user
 * found by its email.
 */

const codeRow = z.object({ code: z.string() });

/** The code kept for the promotion code `id`, or null when it was never read (the primary key). */
export async function cachedPromotionCode(db: D1Database, appid: string, id: string): Promise<string | null> {
	const row = await db.prepare("SELECT code FROM stripe_promotion_codes WHERE appid = ? AND promotion_code = ?").bind(appid, id).first();
	return row ? codeRow.parse(row).code : null;
}

/** Keeps the code read from Stripe; a concurrent read of the same promotion code stored the same code, so the first stays. */
export async function savePromotionCode(db: D1Database, appid: string, id: string, code: string): Promise<void> {
	await db
		.prepare(
			`INSERT INTO stripe_promotion_codes (appid, promotion_code, code, fetched_at) VALUES (?, ?, ?, ?)
			 ON CONFLICT (appid, promotion_code) DO NOTHING`,
		)
		.bind(appid, id, code, nowIso())
		.run();
}

/**
 * Gives a user found by its email the Stripe customer that paid, when it has
 * none yet (a user with another customer keeps it); true when it was set.
 */
export async function linkCustomer(db: D1Database, appid: string, userkey: string, customer: string): Promise<boolean> {
	const result = await db
		.prepare(
			"UPDATE users SET paymentcustomerid = ?, updated_at = ? WHERE userkey = ? AND appid = ? AND paymentcustomerid IS NULL AND erased_at IS NULL",
		)
		.bind(customer, nowIso(), userkey, appid)
		.run();
	return result.meta.changes === 1;
}
