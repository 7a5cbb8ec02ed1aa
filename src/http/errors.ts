import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * Stable, snake_case error codes of the public API. Clients may switch on
 * them; never rename one.
 */
export type ErrorCode =
	| "invalid_json"
	| "invalid_body"
	| "body_too_complex"
	| "unsupported_media_type"
	| "payload_too_large"
	| "unknown_operation"
	| "method_not_allowed"
	| "not_found"
	| "validation_failed"
	| "missing_credentials"
	| "invalid_credentials"
	| "unauthorized"
	| "admin_token_insecure"
	| "app_not_found"
	| "campaign_not_found"
	| "user_not_found"
	| "friend_not_found"
	| "reward_not_found"
	| "referrer_code_not_found"
	| "own_referrer_code"
	| "referral_cycle"
	| "referrer_already_set"
	| "email_taken"
	| "useraccountid_taken"
	| "insufficient_balance"
	| "coupon_distribution"
	| "reward_not_redeemable"
	| "invalid_status_transition"
	| "reward_locked"
	| "rewardunit_required"
	| "idempotency_key_reused"
	| "idempotency_key_in_progress"
	| "friend_has_no_email"
	| "user_has_no_email"
	| "not_a_friend"
	| "rate_limited"
	| "delivery_not_found"
	| "import_rejected"
	| "import_conflict"
	| "event_not_found"
	| "refund_exceeds_transaction"
	| "refundid_reused"
	| "internal_error";

/** An expected failure: becomes the JSON error envelope with its status. */
export class ApiError extends Error {
	constructor(
		readonly status: ContentfulStatusCode,
		readonly errorcode: ErrorCode,
		message: string,
		readonly extra: Record<string, unknown> = {},
		/** Response headers that go with the error (`Retry-After` of a 429). */
		readonly headers: Record<string, string> = {},
	) {
		super(message);
		this.name = "ApiError";
	}
}

/** The failure envelope every error response carries. */
export function errorBody(errorcode: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
	return { success: false, message, errorcode, ...extra };
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new ApiError(400, "validation_failed", message, extra);
export const userNotFound = () => new ApiError(404, "user_not_found", "No user with that identifier in this app.", { statuscode: 2 });
export const campaignNotFound = () => new ApiError(404, "campaign_not_found", "No campaign with that id in this app.", { statuscode: 0 });
export const rewardNotFound = () =>
	new ApiError(404, "reward_not_found", "No reward with that rewarddtlid in this app.", { statuscode: 11 });
