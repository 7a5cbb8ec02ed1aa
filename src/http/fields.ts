import { z } from "zod";
import { ipNetwork } from "../domain/ip";
import { MAX_AMOUNT } from "../rewards/money";
import type { FieldError } from "./errors";

/**
 * zod field types shared by the operation schemas. Requests are normalized
 * first (see request-text.ts), so these see lower-case names and decoded text.
 */

const MAX_TEXT = 2000;

/** An identifier: a non-empty string, or a number sent in its place. */
export const id = z
	.union([z.string(), z.number().finite()])
	.transform((v) => String(v).trim())
	.pipe(z.string().min(1, "must not be empty").max(200, "is too long"));

/** Optional free text; an empty string counts as absent. */
export const optionalText = (max = MAX_TEXT) =>
	z
		.union([z.string(), z.number().finite(), z.null()])
		.optional()
		.transform((v) => (v === null || v === undefined ? undefined : String(v).trim()))
		.pipe(z.string().max(max, `must be at most ${max} characters`).optional())
		.transform((v) => (v === "" ? undefined : v));

/** Optional identifier; empty counts as absent. */
export const optionalId = optionalText(200);

/** A campaign id: numeric inside, accepted as string or number. */
export const campaignId = id.pipe(z.string().regex(/^\d{1,15}$/, "must be a numeric campaign id")).transform(Number);
export const optionalCampaignId = optionalId.pipe(
	z
		.string()
		.regex(/^\d{1,15}$/, "must be a numeric campaign id")
		.transform(Number)
		.optional(),
);

/** Booleans arrive as JSON booleans, or as "true"/"false"/"1"/"0" text. */
export const flag = z
	.union([z.boolean(), z.literal(0), z.literal(1), z.enum(["true", "false", "True", "False", "TRUE", "FALSE", "1", "0", ""])])
	.optional()
	.transform((v) => (v === undefined || v === "" ? undefined : v === true || v === 1 || String(v).toLowerCase() === "true" || v === "1"));

/** An email address, lower-cased so lookups do not depend on case. */
export const optionalEmail = optionalText(254).pipe(
	z
		.email("must be an email address")
		.transform((v) => v.toLowerCase())
		.optional(),
);

/** Phone numbers are digits only, as the spec says. */
export const optionalPhone = optionalText(32).pipe(z.string().regex(/^\d+$/, "must contain digits only").optional());

/** An IPv4 or IPv6 address, turned into the network the fraud checks compare (see domain/ip.ts). */
export const optionalIpAddress = optionalText(64).pipe(
	z
		.string()
		.transform((v, ctx) => {
			const network = ipNetwork(v);
			if (network === null) ctx.addIssue({ code: "custom", message: "must be an IPv4 or IPv6 address" });
			return network ?? "";
		})
		.optional(),
);

/**
 * A money amount sent as a string or number, non-negative, at most 2
 * decimals of meaning, at most MAX_AMOUNT: the ledger's own limit, so every
 * later operation on it (a partial refund's proportion) can handle it.
 */
export const amount = z
	.union([
		z
			.string()
			.trim()
			.regex(/^\d+(\.\d+)?$/, "must be a non-negative number"),
		z.number().finite().nonnegative(),
	])
	.transform(Number)
	.pipe(z.number().finite().nonnegative().max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`));

/** The largest reward, redemption or transaction value accepted (docs/rewards.md, "Amount limits"). */
export const MAX_MONEY = 1_000_000_000;

/**
 * A money amount that must be exact in hundredths: at most two decimals
 * (`10.505` is refused, not rounded) and at most MAX_MONEY.
 */
export const exactAmount = z
	.union([
		z
			.string()
			.trim()
			.regex(/^\d+(\.\d{1,2})?$/, "must be a non-negative number with at most 2 decimals"),
		z
			.number()
			.finite()
			.nonnegative()
			.refine(
				(n) => Number.isInteger(Math.round(n * 100)) && Math.abs(Math.round(n * 100) - n * 100) < 1e-6,
				"must have at most 2 decimals",
			),
	])
	.transform(Number)
	.pipe(z.number().max(MAX_MONEY, `must be at most ${MAX_MONEY}`));

/** An integer sent as string or number (page index, page size). */
export const optionalPositiveInt = z
	.union([z.string().trim().regex(/^\d+$/, "must be a positive integer"), z.number().int(), z.null()])
	.optional()
	.transform((v) => (v === undefined || v === null || v === "" ? undefined : Number(v)))
	.pipe(z.number().int().min(1, "must be at least 1").optional());

/** The longest customid, in characters. */
export const MAX_CUSTOMID = 100;

/**
 * `customid`: the product's own id of an event (an order id: a UUID, Stripe's
 * `in_...`, `ord_8f3a-77`), 1-100 printable characters, compared exactly
 * (case-sensitive). An integer, sent as a number or as digits in text, is
 * stored in canonical form, so `1001`, "1001" and "01001" stay the one event
 * they were when customids had to be integers (docs/decisions.md §4).
 * Printable: no control character, no lone surrogate (text hygiene already
 * refuses those with a clearer message), not only blanks.
 */
export const customId = z
	.union([z.string(), z.number().int()])
	.transform((v) => (typeof v === "number" ? BigInt(v).toString() : v))
	.pipe(
		z
			.string()
			.min(1, "must not be empty")
			.refine((v) => [...v].length <= MAX_CUSTOMID, `must be at most ${MAX_CUSTOMID} characters`)
			.refine((v) => v.trim() !== "", "must not be blank")
			.refine((v) => !/[\p{Cc}\p{Cs}]/u.test(v), "must hold printable characters only"),
	)
	.transform((v) => (/^\s*-?\d{1,30}\s*$/.test(v) ? BigInt(v.trim()).toString() : v));

/** Turns a zod error into one message that names each bad field. */
export function describeZodError(error: z.ZodError, input?: unknown): { message: string; fields: string[]; errors: FieldError[] } {
	const errors = error.issues.map((issue) => ({
		field: issue.path.map(String).join(".") || "body",
		// zod does not report the value it got: read it from the input, to tell a missing field from a wrong one.
		message: needOf(issue, valueAt(input, issue.path), String(issue.path.at(-1) ?? "")),
	}));
	return {
		message: `Invalid request. ${errors.map((e) => `${e.field}: ${e.message}`).join("; ")}`,
		fields: errors.map((e) => e.field),
		errors,
	};
}

/** The value at `path` inside `input`, or undefined. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
	let value = input;
	for (const key of path) {
		if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined;
		value = (value as Record<PropertyKey, unknown>)[key];
	}
	return value;
}

const typeName = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/** What a failing value needs, in words: never zod's bare "Invalid input". */
function needOf(issue: z.core.$ZodIssue, value: unknown, field: string): string {
	const missing = value === undefined;
	if (issue.code === "invalid_type") return missing ? "is required" : `must be ${article(issue.expected)} (got ${typeName(value)})`;
	if (issue.code === "invalid_union") {
		const inner = issue.errors.flat();
		if (missing && inner.every((i) => i.code === "invalid_type")) return "is required";
		// A field that takes several forms (a number as text or as a number): a branch's own rule says most.
		const specific = inner.find((i) => i.code !== "invalid_type" && i.code !== "invalid_union" && i.code !== "invalid_value");
		if (specific) return needOf(specific, value, field);
		const expected = [...new Set(expectedTypes(inner))];
		if (MONEY_FIELDS.has(field))
			return `must be a decimal number such as 19.99, or the same as text such as "19.99" (got ${typeName(value)})`;
		if (expected.length > 0) return `must be ${expected.map(article).join(" or ")} (got ${typeName(value)})`;
	}
	return issue.message;
}

/** Amounts: a number, or the same as text (the spec sends them as text). */
const MONEY_FIELDS = new Set(["transactionvalue", "amount", "refundvalue"]);

/** The types a value may have, through nested unions (`null` and literals left out: they are not what a caller means to send). */
function expectedTypes(issues: z.core.$ZodIssue[]): string[] {
	return issues.flatMap((i) => {
		if (i.code === "invalid_union") return expectedTypes(i.errors.flat());
		return i.code === "invalid_type" && i.expected !== "null" ? [i.expected] : [];
	});
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);
