/**
 * Minor units of currencies (Stripe's amounts are integers in the currency's
 * smallest unit: https://docs.stripe.com/currencies#zero-decimal). The
 * service keeps money in hundredths of a unit, so a 2-decimal currency's
 * minor unit is a hundredth, a zero-decimal currency's is a whole unit and a
 * three-decimal currency's a thousandth.
 */

const ZERO_DECIMAL = new Set([
	"bif",
	"clp",
	"djf",
	"gnf",
	"jpy",
	"kmf",
	"krw",
	"mga",
	"pyg",
	"rwf",
	"ugx",
	"vnd",
	"vuv",
	"xaf",
	"xof",
	"xpf",
]);
const THREE_DECIMAL = new Set(["bhd", "jod", "kwd", "omr", "tnd"]);

/** Digits after the decimal point of `currency` (ISO 4217, any case). */
export function currencyExponent(currency: string): 0 | 2 | 3 {
	const code = currency.toLowerCase();
	if (ZERO_DECIMAL.has(code)) return 0;
	if (THREE_DECIMAL.has(code)) return 3;
	return 2;
}

/** An amount in minor units as a number of whole units (1999 USD -> 19.99, 500 JPY -> 500, 1500 KWD -> 1.5). */
export const minorToUnits = (minor: number, currency: string) => minor / 10 ** currencyExponent(currency);

/**
 * Hundredths of a unit as minor units. A zero-decimal currency rounds half
 * away from zero to whole units (a reward of 10.50 JPY pays 11).
 */
export function hundredthsToMinor(hundredths: number, currency: string): number {
	const exponent = currencyExponent(currency);
	if (exponent === 2) return hundredths;
	if (exponent === 3) return hundredths * 10;
	return Math.sign(hundredths) * Math.round(Math.abs(hundredths) / 100);
}

/** A reward unit is a currency Stripe can pay when it is a 3-letter code. */
export const isCurrencyCode = (unit: string) => /^[A-Za-z]{3}$/.test(unit);
