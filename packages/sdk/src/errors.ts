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
	readonly errorcode: string;
	readonly errors: FieldError[];
	/** True when the same call may succeed later (5xx, 429, network, or the service said so). */
	readonly retryable: boolean;
	/** The whole answer, with any further detail (`fields`, `statuscode`, `approved`, ...). */
	readonly body: Record<string, unknown>;

	constructor(status: number, body: Record<string, unknown>, options?: { cause?: unknown }) {
		super(typeof body.message === "string" ? body.message : `HTTP ${status}`, options);
		this.status = status;
		this.body = body;
		this.errorcode = typeof body.errorcode === "string" ? body.errorcode : status === 0 ? "network_error" : "unknown_error";
		this.errors = Array.isArray(body.errors) ? (body.errors as FieldError[]) : [];
		this.retryable = status === 0 || status === 429 || status >= 500 || body.retryable === true;
	}
}
