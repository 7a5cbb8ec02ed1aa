/**
 * Money inside the ledger is integer hundredths, so sums and differences are
 * exact; numbers with at most two decimals cross the RPC boundary.
 */

/** The largest amount (in units) the ledger accepts; keeps hundredths a safe integer with room for sums. */
export const MAX_AMOUNT = 1e11;

/**
 * Converts an amount to integer hundredths, rounding half away from zero
 * ("half-up" as money is usually rounded): 1.005 -> 101, 2.675 -> 268.
 * Binary floats cannot hold most decimals exactly (1.005 * 100 is
 * 100.49999999999999), so the scaling is done on the decimal text instead.
 * Returns null for a value that is not a finite number within ±MAX_AMOUNT.
 */
export function toHundredths(amount: number): number | null {
	if (typeof amount !== "number" || !Number.isFinite(amount) || Math.abs(amount) > MAX_AMOUNT) return null;
	const abs = Math.abs(amount);
	const text = String(abs);
	// String() only uses exponent form below 1e-6 (above MAX_AMOUNT is excluded); such amounts round to 0.
	const scaled = text.includes("e") ? abs * 100 : Number(`${text}e2`);
	const rounded = Math.floor(scaled + 0.5);
	return amount < 0 && rounded !== 0 ? -rounded : rounded;
}

/**
 * A finite number as the exact decimal its shortest text form spells
 * (`digits` × 10^-`scale`): what the caller sent, not the binary float
 * nearest to it.
 */
function exactDecimal(value: number): { digits: bigint; scale: number } {
	const [mantissa = "0", exponent = "0"] = String(Math.abs(value)).split("e");
	const [whole = "0", fraction = ""] = mantissa.split(".");
	const scale = fraction.length - Number(exponent);
	const digits = BigInt(whole + fraction);
	return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 };
}

/**
 * `percent` % of `value`, in integer hundredths, rounded half away from zero
 * on the exact decimal product: 15 % of 33.30 is 4.995, so 500 (the float
 * product 4.994999... would round to 499). In hundredths, percent/100 ×
 * value × 100 is simply percent × value, computed on BigInt digits.
 */
export function percentOfHundredths(percent: number, value: number): number {
	const p = exactDecimal(percent);
	const v = exactDecimal(value);
	const divisor = 10n ** BigInt(p.scale + v.scale);
	const rounded = Number((2n * p.digits * v.digits + divisor) / (2n * divisor));
	return percent < 0 !== value < 0 && rounded !== 0 ? -rounded : rounded;
}

/** Hundredths back to a number with at most two decimals (exact for safe integers divided by 100 as printed). */
export function fromHundredths(hundredths: number): number {
	return hundredths / 100;
}

/** The public text form of an amount: `10`, `12.5`, `0.07` (shortest exact decimal). */
export function formatAmount(hundredths: number): string {
	return String(fromHundredths(hundredths));
}
