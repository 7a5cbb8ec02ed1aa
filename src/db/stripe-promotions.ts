import { z } from "zod";
import { nowIso } from "../domain/dates";

/**
 * Promotion codes at checkout (migration 0028, docs/stripe.md "Promotion
 * codes"): the customer-facing code of each Stripe promotion code an app's
 * payments carried, read once from Stripe and kept (Stripe never changes a
 * promotion code's `code`). A Stripe customer is never linked to a user by
 * the email a payer typed (issue 47; it was, by `linkCustomer`, until then).
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
