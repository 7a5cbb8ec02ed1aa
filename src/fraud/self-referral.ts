/**
 * Self-referral by a promotion code (docs/stripe.md, "Promotion codes"): a
 * Stripe customer paying with the promotion code that carries its own
 * referral code, or with the code of a user paying as the same Stripe
 * customer, refers nobody. The attribution is refused (and counted); the
 * payment still converts, without a referrer. Other signs that friend and
 * referrer are one person (a shared mailbox, device or network) are the
 * fraud signals checked on the conversion, as for any attribution.
 */
export function isSelfReferral(
	payer: { customer: string; userkey: string | null },
	referrer: { userkey: string; paymentcustomerid: string | null },
): boolean {
	if (payer.userkey !== null && payer.userkey === referrer.userkey) return true;
	return referrer.paymentcustomerid !== null && referrer.paymentcustomerid === payer.customer;
}
