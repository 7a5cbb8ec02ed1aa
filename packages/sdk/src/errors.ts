import type { components } from "./openapi.js";

/** Every `errorcode` the service documents (docs/api.md, "Error codes"), from its OpenAPI document. */
export type KnownErrorCode = components["schemas"]["Error"]["errorcode"];

declare const unknownErrorCode: unique symbol;
/**
 * A code this version of the SDK does not know: the service may add codes
 * (docs/api.md), so `errorcode` can hold one at run time. It is a string to
 * read and log, but no literal you write is one: a misspelt code assigned to
 * an `ErrorCode` or passed to `ReferralError.is` fails to type-check instead
 * of never matching. (TypeScript lets `===` and `case` compare any literal
 * with an open string type, so test codes with `is`.) Act on an unknown code
 * by `status`.
 */
export type UnknownErrorCode = string & { readonly [unknownErrorCode]: true };

/** The codes a program can name: the documented ones and the two the SDK adds (`network_error`, `unknown_error`). */
export type NamedErrorCode = KnownErrorCode | "network_error" | "unknown_error";

/** `ReferralError.errorcode`: a named code, or a newer one this SDK does not know. */
export type ErrorCode = NamedErrorCode | UnknownErrorCode;

/** One failing field of a `validation_failed` answer. */
export interface FieldError {
	field: string;
	message: string;
}

/**
 * A failed call: the service's answer (`errorcode`, `message`, `errors`) and
 * its HTTP status, or a network failure (`status` 0, `errorcode`
 * `network_error`). Switch on `errorcode`, never on `message`.
 */
export class ReferralError extends Error {
	override readonly name = "ReferralError";
	readonly status: number;
	readonly errorcode: ErrorCode;
	readonly errors: FieldError[];
	/** The request's id (`req_...`): quote it to the service's operator, who finds the request in the logs. Null for a network failure. */
	readonly requestid: string | null;
	/** The link to the code's entry in docs/api.md; null when the answer had none. */
	readonly docs: string | null;
	/** True when the same call may succeed later (5xx, 429, network, or the service said so). */
	readonly retryable: boolean;
	/** The whole answer, with any further detail (`fields`, `statuscode`, `approved`, ...). */
	readonly body: Record<string, unknown>;

	/** Whether this is the error `code` (a misspelt code does not compile): `if (error.is("insufficient_balance")) ...`. */
	is(code: NamedErrorCode): boolean {
		return this.errorcode === code;
	}

	constructor(status: number, body: Record<string, unknown>, options?: { cause?: unknown }) {
		super(typeof body.message === "string" ? body.message : `HTTP ${status}`, options);
		this.status = status;
		this.body = body;
		// The service's word, whatever it is: a code this SDK does not list is typed UnknownErrorCode.
		this.errorcode = typeof body.errorcode === "string" ? (body.errorcode as ErrorCode) : status === 0 ? "network_error" : "unknown_error";
		this.requestid = typeof body.requestid === "string" ? body.requestid : null;
		this.docs = typeof body.docs === "string" ? body.docs : null;
		this.errors = Array.isArray(body.errors) ? (body.errors as FieldError[]) : [];
		this.retryable = status === 0 || status === 429 || status >= 500 || body.retryable === true;
	}
}
