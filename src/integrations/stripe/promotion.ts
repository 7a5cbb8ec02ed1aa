import type Stripe from "stripe";
import { countStripeEvent } from "../../db/stripe";
import { claimCustomer } from "../../db/stripe-identity";
import { cachedPromotionCode, savePromotionCode } from "../../db/stripe-promotions";
import { findReferrer, findUser, type User } from "../../db/users";
import { isSelfReferral } from "../../fraud/self-referral";
import { attributeUserToReferrer } from "../../operations/attribution";
import { findOrRegisterUser } from "../../operations/users";
import type { WorkContext } from "../../operations/work";
import { refusedByStripe, type StripeConnection } from "./connection";
import type { StripeDiscount, StripeEventMessage } from "./events";

/**
 * Promotion codes at checkout (issue 34, docs/stripe.md "Promotion codes"):
 * a payment whose discounts carry a Stripe promotion code whose `code` is a
 * referral code of the app (ignoring case, aliases included) attributes the
 * paying customer's user to that code's owner before the conversion is
 * recorded, when the user has no referrer yet; an unknown customer becomes a
 * user known by its customer id alone (never by the email it typed, issue
 * 47), referred by that owner. The referrer then
 * earns from the payment as from any referred one, and the conversion's fraud
 * signals apply; a customer using its own code is refused and counted.
 */

/** The paying user as the consumer knows it (db/stripe.ts userOfCustomer). */
export interface Payer {
	userkey: string;
	campaignid: number;
	erased_at: string | null;
	referrer_userid: number | null;
}

/** At most this many promotion codes of one payment are tried (Stripe allows a handful of discounts). */
const MAX_CODES = 5;

const payerOf = (u: User): Payer => ({
	userkey: u.userkey,
	campaignid: u.campaignid,
	erased_at: u.erasedAt,
	referrer_userid: u.referrerUserid,
});

const counter = (ctx: WorkContext) => (outcome: string) => countStripeEvent(ctx.env.DB, ctx.app.appid, `promotion_code:${outcome}`);

/** The owner of the payment's first promotion code that is a referral code of the app, or null. */
async function referrerOfPayment(ctx: WorkContext, connection: StripeConnection, work: StripeEventMessage): Promise<User | null> {
	const ids = await promotionCodeIds(ctx, connection, work);
	return ids.length === 0 ? null : referrerOfCodes(ctx, connection, ids);
}

/**
 * The user the payment converts for, after attribution by promotion code, for
 * a customer the app knows (its `paymentcustomerid`, set by the product):
 * `payer` unchanged when there is nothing to attribute (no promotion code of a
 * referrer, a referrer already set, self-referral, a cycle), else the same
 * user now referred by the code's owner. The checks and the write are the
 * shared attribution's (operations/attribution.ts), as applyreferrercode's.
 */
export async function attributeByPromotionCode(
	ctx: WorkContext,
	connection: StripeConnection,
	work: StripeEventMessage,
	customer: string,
	payer: Payer,
): Promise<Payer> {
	// An existing referrer is kept, and then Stripe is not asked anything.
	if (payer.erased_at !== null || payer.referrer_userid !== null) return payer;
	const referrer = await referrerOfPayment(ctx, connection, work);
	if (!referrer) return payer;
	const user = await findUser(ctx.env.DB, ctx.app.appid, { userkey: payer.userkey });
	if (!user) return payer;
	const count = counter(ctx);
	const result = await attributeUserToReferrer({ ...ctx, origin: "" }, user, referrer, customer);
	if (result.kind === "own_code") await count("self_referral");
	if (result.kind === "cycle") await count("referral_cycle");
	if (result.kind === "referrer_kept") await count("referrer_kept");
	if (result.kind !== "applied") return payerOf(user);
	await count("attributed");
	return { ...payerOf(user), campaignid: referrer.campaignid, referrer_userid: referrer.userid };
}

/**
 * A customer the app does not know, paying with a referrer's promotion code
 * (issue 47: identity from the product, never from a typed email): it becomes
 * a NEW user known by its customer id alone, referred by the code's owner.
 * The email the payer typed is not stored: Stripe never verified it, and a
 * user holding it would be the user the product's `register` with that email
 * finds, so a stranger could pre-register someone's address with their own
 * customer and be paid that person's rewards (docs/stripe.md). The caller
 * checked that no user has that email (a match pays nothing).
 *
 * Two events of one new customer (a checkout and its invoice) arrive
 * together: the first to claim the customer (db/stripe-identity.ts) creates
 * the user, the other answers `retry` and finds it on its next try. Null:
 * no promotion code of a referrer, nothing to create.
 */
export async function registerByPromotionCode(
	ctx: WorkContext,
	connection: StripeConnection,
	work: StripeEventMessage,
	customer: string,
): Promise<Payer | "retry" | null> {
	const referrer = await referrerOfPayment(ctx, connection, work);
	if (!referrer) return null;
	if (isSelfReferral({ customer, userkey: null }, referrer)) {
		await counter(ctx)("self_referral");
		return null;
	}
	if (!(await claimCustomer(ctx.env.DB, ctx.app.appid, customer, work.eventid, Date.now()))) return "retry";
	// No email and no account id: nothing to find, a new user every time (the claim makes it once per customer).
	const { user } = await findOrRegisterUser({ ...ctx, origin: "" }, { paymentcustomerid: customer }, referrer.referralcode);
	await counter(ctx)("attributed");
	return payerOf(user);
}

/** The first of the codes that is a live user's referral code or alias. */
async function referrerOfCodes(ctx: WorkContext, connection: StripeConnection, ids: string[]): Promise<User | null> {
	for (const id of ids.slice(0, MAX_CODES)) {
		const code = await promotionCodeOf(ctx, connection, id);
		if (code === null) continue;
		const referrer = await findReferrer(ctx.env.DB, ctx.app.appid, code);
		if (referrer) return referrer;
	}
	return null;
}

/**
 * A promotion code's `code`: from D1 when it was read before (Stripe never
 * changes it), else `GET /v1/promotion_codes/{id}`, kept. A promotion code
 * Stripe does not know (a 4xx) names no referrer; a network error or 5xx
 * throws, and the event is retried.
 */
async function promotionCodeOf(ctx: WorkContext, connection: StripeConnection, id: string): Promise<string | null> {
	const { env, app } = ctx;
	const cached = await cachedPromotionCode(env.DB, app.appid, id);
	if (cached !== null) return cached;
	let promotion: Stripe.PromotionCode;
	try {
		promotion = await connection.stripe.promotionCodes.retrieve(id);
	} catch (error) {
		if (!refusedByStripe(error)) throw error;
		await countStripeEvent(env.DB, app.appid, "promotion_code:unreadable");
		return null;
	}
	await savePromotionCode(env.DB, app.appid, id, promotion.code);
	return promotion.code;
}

/**
 * The promotion codes of a payment, in order, once each. An invoice event
 * lists its discounts as ids (the pinned API version expands them only on
 * request): the invoice is then read with `expand[]=discounts`.
 */
async function promotionCodeIds(ctx: WorkContext, connection: StripeConnection, work: StripeEventMessage): Promise<string[]> {
	let discounts: StripeDiscount[] = work.object.discounts ?? [];
	if (work.type === "invoice.paid" && discounts.some((d) => typeof d === "string")) {
		try {
			const invoice = await connection.stripe.invoices.retrieve(work.object.id, { expand: ["discounts"] });
			discounts = invoice.discounts.map((d) =>
				typeof d === "string"
					? d
					: { promotion_code: typeof d.promotion_code === "string" ? d.promotion_code : (d.promotion_code?.id ?? null) },
			);
		} catch (error) {
			if (!refusedByStripe(error)) throw error;
			await countStripeEvent(ctx.env.DB, ctx.app.appid, "promotion_code:unreadable");
			return [];
		}
	}
	const ids = discounts.flatMap((d) => (typeof d !== "string" && d.promotion_code ? [d.promotion_code] : []));
	return [...new Set(ids)];
}
