import type Stripe from "stripe";
import { attributeReferrer } from "../../db/referrals";
import { countStripeEvent } from "../../db/stripe";
import { cachedPromotionCode, linkCustomer, savePromotionCode } from "../../db/stripe-promotions";
import { findReferrer, findUser, type User } from "../../db/users";
import { nowIso } from "../../domain/dates";
import { newEventId } from "../../domain/ids";
import { isSelfReferral } from "../../fraud/self-referral";
import type { OperationContext } from "../../http/operation";
import { attributionData, findOrRegisterUser } from "../../operations/users";
import type { WorkContext } from "../../operations/work";
import { sendOutboxEvents, webhookEvent } from "../../outbox/events";
import { refusedByStripe, type StripeConnection } from "./connection";
import type { StripeDiscount, StripeEventMessage, StripeObject } from "./events";

/**
 * Promotion codes at checkout (issue 34, docs/stripe.md "Promotion codes"):
 * a payment whose discounts carry a Stripe promotion code whose `code` is a
 * referral code of the app (ignoring case, aliases included) attributes the
 * paying customer's user to that code's owner before the conversion is
 * recorded, when the user has no referrer yet; an unknown customer becomes a
 * user (its customer id and email) referred by that owner. The referrer then
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

/**
 * The user the payment converts for, after attribution by promotion code:
 * `payer` unchanged when there is nothing to attribute (no promotion code of
 * a referrer, a referrer already set, self-referral), the new user when the
 * customer was unknown, null when it stays unknown.
 */
export async function attributeByPromotionCode(
	ctx: WorkContext,
	connection: StripeConnection,
	work: StripeEventMessage,
	customer: string,
	payer: Payer | null,
): Promise<Payer | null> {
	// An existing referrer is kept, and then Stripe is not asked anything.
	if (payer && (payer.erased_at !== null || payer.referrer_userid !== null)) return payer;
	const ids = await promotionCodeIds(ctx, connection, work);
	if (ids.length === 0) return payer;
	const referrer = await referrerOfCodes(ctx, connection, ids);
	if (!referrer) return payer;
	const count = (outcome: string) => countStripeEvent(ctx.env.DB, ctx.app.appid, `promotion_code:${outcome}`);
	if (isSelfReferral({ customer, userkey: payer?.userkey ?? null }, referrer)) {
		await count("self_referral");
		return payer;
	}
	if (payer) return attributeUser(ctx, payer.userkey, referrer, count);

	const opCtx: OperationContext = { ...ctx, origin: "" };
	const email = emailOf(work.object);
	const profile = { paymentcustomerid: customer, ...(email ? { email } : {}) };
	const { user, alreadyRegistered } = await findOrRegisterUser(opCtx, profile, referrer.referralcode);
	if (!alreadyRegistered) {
		await count("attributed");
		return payerOf(user);
	}
	// The customer's email is a user's already: that user paid, unless it pays as another Stripe customer.
	if (user.erasedAt !== null) return null;
	if (user.paymentcustomerid !== null && user.paymentcustomerid !== customer) {
		await count("email_of_another_customer");
		return null;
	}
	if (user.paymentcustomerid === null) await linkCustomer(ctx.env.DB, ctx.app.appid, user.userkey, customer);
	if (isSelfReferral({ customer, userkey: user.userkey }, referrer)) {
		await count("self_referral");
		return payerOf(user);
	}
	if (user.referrerUserid !== null) return payerOf(user);
	return attributeUser(ctx, user.userkey, referrer, count);
}

/** Sets a known user's referrer as applyreferrercode does: one guarded UPDATE, with its webhook. */
async function attributeUser(
	ctx: WorkContext,
	userkey: string,
	referrer: User,
	count: (outcome: string) => Promise<void>,
): Promise<Payer | null> {
	const { env, app } = ctx;
	const user = await findUser(env.DB, app.appid, { userkey });
	if (!user || user.erasedAt !== null) return null;
	const now = nowIso();
	const attributionId = newEventId();
	const event = webhookEvent(
		app.appid,
		"referral.attributed",
		attributionData({ ...ctx, origin: "" }, { ...user, campaignid: referrer.campaignid }, referrer, now),
	);
	const outcome = await attributeReferrer(env.DB, {
		appid: app.appid,
		userid: user.userid,
		referrer: { userid: referrer.userid, campaignid: referrer.campaignid },
		attributionId,
		at: now,
		event,
	});
	if (!outcome.applied) {
		// Another attribution came first (its referrer is kept), or this one would close a cycle.
		await count(outcome.cycle ? "referral_cycle" : "referrer_kept");
		return payerOf(user);
	}
	if (outcome.recorded) ctx.waitUntil(sendOutboxEvents(env, [event]));
	await count("attributed");
	return { ...payerOf(user), campaignid: referrer.campaignid, referrer_userid: referrer.userid };
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

/** The payer's email as the payment names it, lower-cased like every stored email; null when it is not an address. */
function emailOf(o: StripeObject): string | null {
	const email = (o.customer_email ?? o.customer_details?.email ?? "").trim().toLowerCase();
	return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) && email.length <= 254 ? email : null;
}
