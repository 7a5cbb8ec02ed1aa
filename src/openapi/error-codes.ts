import type { ErrorCode } from "../http/errors";

/**
 * Every `errorcode` the API can answer, for the OpenAPI document. The checks
 * below make `npm run typecheck` fail when http/errors.ts gains a code that is
 * not listed here, so the document cannot fall behind.
 */
export const ERROR_CODES = [
	"invalid_json",
	"invalid_body",
	"body_too_complex",
	"unsupported_media_type",
	"payload_too_large",
	"unknown_operation",
	"method_not_allowed",
	"not_found",
	"validation_failed",
	"missing_credentials",
	"invalid_credentials",
	"unauthorized",
	"admin_token_insecure",
	"public_origin_unset",
	"app_not_found",
	"campaign_not_found",
	"user_not_found",
	"user_erased",
	"friend_not_found",
	"reward_not_found",
	"referrer_code_not_found",
	"own_referrer_code",
	"referral_cycle",
	"referrer_already_set",
	"email_taken",
	"useraccountid_taken",
	"referralcode_taken",
	"insufficient_balance",
	"coupon_distribution",
	"reward_not_redeemable",
	"invalid_status_transition",
	"reward_locked",
	"rewardunit_required",
	"idempotency_key_reused",
	"idempotency_key_in_progress",
	"friend_has_no_email",
	"user_has_no_email",
	"not_a_friend",
	"rate_limited",
	"delivery_not_found",
	"import_rejected",
	"import_conflict",
	"event_not_found",
	"refund_exceeds_transaction",
	"refundid_reused",
	"customid_conflict",
	"forbidden",
	"member_exists",
	"not_wallet_distribution",
	"invalid_signature",
	"service_busy",
	"invalid_event",
	"unknown_variable",
	"testkeys_exist",
	"internal_error",
] as const satisfies readonly ErrorCode[];

type Unlisted = Exclude<ErrorCode, (typeof ERROR_CODES)[number]>;
/** Fails to compile while some ErrorCode is missing from ERROR_CODES (the error names it). */
export const everyErrorCodeListed: [Unlisted] extends [never] ? true : { missing: Unlisted } = true;
