/**
 * Reward units: a currency is its ISO 4217 code and a points unit a name
 * such as `POINTS`, both upper case, so `usd`, `Usd` and `USD` are one unit
 * with one balance (a balance is kept per unit, and a redemption spends one
 * unit). `%` is not a unit: it marks a percent rule, paid in the campaign's
 * currency.
 */

/** The shape of a unit once upper-cased: every ISO 4217 code has it, and so must a points unit. */
const UNIT = /^[A-Z][A-Z0-9_]{0,15}$/;

/** The stored form of a unit (trimmed, upper case), or null when it is neither a currency code nor a points unit (`US$`, `1pts`). */
export function normalizeUnit(raw: string): string | null {
	const unit = raw.trim().toUpperCase();
	return UNIT.test(unit) ? unit : null;
}

export const UNIT_EXPECTED = "must be an ISO 4217 currency code (USD) or a points unit of A-Z, 0-9 and _ starting with a letter (POINTS)";
