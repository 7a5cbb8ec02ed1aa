import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { LedgerError } from "../ledger/types";

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
	| "public_origin_unset"
	| "app_not_found"
	| "campaign_not_found"
	| "user_not_found"
	| "user_erased"
	| "friend_not_found"
	| "reward_not_found"
	| "referrer_code_not_found"
	| "own_referrer_code"
	| "referral_cycle"
	| "referrer_already_set"
	| "email_taken"
	| "useraccountid_taken"
	| "referralcode_taken"
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
	| "customid_conflict"
	| "campaign_archived"
	| "campaign_in_use"
	| "forbidden"
	| "member_exists"
	| "not_wallet_distribution"
	| "invalid_signature"
	| "service_busy"
	| "invalid_event"
	| "unknown_variable"
	| "testkeys_exist"
	| "restore_unavailable"
	| "restore_past_payout"
	| "internal_error";

/** An expected failure: becomes the JSON error envelope with its status. */
export class ApiError extends Error {
	readonly extra: Record<string, unknown>;

	constructor(
		readonly status: ContentfulStatusCode,
		readonly errorcode: ErrorCode,
		message: string,
		extra: Record<string, unknown> = {},
		/** Response headers that go with the error (`Retry-After` of a 429). */
		readonly headers: Record<string, string> = {},
	) {
		super(message);
		this.name = "ApiError";
		this.extra = errorcode === "validation_failed" ? withFieldErrors(message, extra) : extra;
	}
}

/** One failing field of a 400 and what it needs. */
export interface FieldError {
	field: string;
	message: string;
}

/**
 * Every `validation_failed` answer carries `errors`, one `{field, message}`
 * per field in `fields`, so a client can show each next to its input. When
 * the thrower gave none, each is read from the message's `field: what it
 * needs` parts (the form every 400 message has), else the whole message.
 */
export function withFieldErrors(message: string, extra: Record<string, unknown>): Record<string, unknown> {
	if (extra.errors !== undefined || !Array.isArray(extra.fields)) return extra;
	const parts = new Map<string, string>();
	for (const part of message.replace(/^Invalid request\. /, "").split("; ")) {
		const at = part.indexOf(": ");
		if (at > 0 && !parts.has(part.slice(0, at))) parts.set(part.slice(0, at), part.slice(at + 2));
	}
	const errors: FieldError[] = extra.fields.map((field) => ({ field: String(field), message: parts.get(String(field)) ?? message }));
	return { ...extra, errors };
}

/** The failure envelope every error response carries. */
export function errorBody(errorcode: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
	return { success: false, message, errorcode, ...extra };
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new ApiError(400, "validation_failed", message, extra);
export const userNotFound = () => new ApiError(404, "user_not_found", "No user with that identifier in this app.", { statuscode: 2 });
/**
 * The user was erased (admin privacy API, docs/fraud.md): erasure is final,
 * so every operation that names it is refused and changes nothing.
 */
export const userErased = () =>
	new ApiError(410, "user_erased", "This user's personal data was erased; the user can no longer be used.", { statuscode: 0 });

/** Refuses an erased user (410 user_erased); anything else passes. */
export function refuseErased(user: { erasedAt: string | null }): void {
	if (user.erasedAt !== null) throw userErased();
}

export const campaignNotFound = () => new ApiError(404, "campaign_not_found", "No campaign with that id in this app.", { statuscode: 0 });
/** An archived campaign records no new conversion (issue 48; docs/api.md): restore it first. */
export const campaignArchived = (campaign: { campaignid: number; campaignname: string }) =>
	new ApiError(
		409,
		"campaign_archived",
		`Campaign ${campaign.campaignid} (${campaign.campaignname}) is archived: it records no new conversion and grants nothing; nothing was stored. Restore it in the console or with POST /admin/v1/apps/{appid}/campaigns/${campaign.campaignid}/restore.`,
		{ fields: ["campaignid"], campaignid: campaign.campaignid },
	);
export const rewardNotFound = () =>
	new ApiError(404, "reward_not_found", "No reward with that rewarddtlid in this app.", { statuscode: 11 });

/** Seconds a client told `service_busy` waits before its retry: D1's queue drains in well under that. */
export const BUSY_RETRY_AFTER_SECONDS = 2;

/**
 * D1 refused or lost a query for a reason of its own (overloaded, reset,
 * connection lost; instrument/d1-availability.ts): a 503 the client may retry as it is.
 * Every write path leaves nothing half done when a statement fails (one
 * guarded batch, or a ledger's two-phase change), so the retry is safe.
 */
export const serviceBusy = () =>
	new ApiError(
		503,
		"service_busy",
		"The service is busy; nothing was changed that a retry would repeat. Retry after the Retry-After delay.",
		{ retryable: true },
		{ "Retry-After": String(BUSY_RETRY_AFTER_SECONDS) },
	);

/** Turns a ledger's expected failure into the API error it stands for. */
export function ledgerError(error: LedgerError): ApiError {
	switch (error.code) {
		case "reward_not_found":
			return rewardNotFound();
		case "invalid_status_transition":
			return new ApiError(409, "invalid_status_transition", `${error.rewarddtlid}: ${error.message}`, { rewarddtlid: error.rewarddtlid });
		case "insufficient_balance":
			return new ApiError(409, "insufficient_balance", `Cannot redeem more than the approved balance (${error.approved}).`, {
				approved: error.approved,
			});
		case "not_wallet_distribution":
			return new ApiError(400, "not_wallet_distribution", `${error.rewarddtlid}: ${error.message}.`, { rewarddtlid: error.rewarddtlid });
		case "reward_not_redeemable":
			return new ApiError(409, "reward_not_redeemable", `${error.rewarddtlid}: ${error.message}`, { rewarddtlid: error.rewarddtlid });
		case "invalid_amount":
			return badRequest(`amount: ${error.message}`, { fields: ["amount"] });
		case "reward_locked":
			return new ApiError(409, "reward_locked", `${error.rewarddtlid ? `${error.rewarddtlid}: ` : ""}${error.message}`, {
				rewarddtlid: error.rewarddtlid,
				retryable: true,
			});
		case "rewardunit_required":
			return new ApiError(
				400,
				"rewardunit_required",
				`The approved rewards span several units (${error.rewardunits.join(", ")}); name one in rewardunit.`,
				{ fields: ["rewardunit"], rewardunits: error.rewardunits },
			);
		case "idempotency_key_reused":
			return new ApiError(422, "idempotency_key_reused", error.message);
		case "refund_exceeds_transaction":
			return new ApiError(409, "refund_exceeds_transaction", `Cannot refund more than the transaction value: ${error.message}.`, {
				transactionvalue: error.transactionvalue,
				refunded: error.refunded,
			});
		case "refundid_reused":
			return new ApiError(409, "refundid_reused", `${error.message}; use a new refundid.`);
		case "user_erased":
			return userErased();
		case "transaction_aborted":
		case "invalid_operation":
			throw new Error(`ledger: ${error.code}: ${error.message}`);
	}
}
