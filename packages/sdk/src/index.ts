export { type ClientOptions, ReferralClient, retryAfterMs } from "./client.js";
export { decodeAnswer, encodeRequest, formDecode } from "./encoding.js";
export {
	type ErrorCode,
	type FieldError,
	type KnownErrorCode,
	type NamedErrorCode,
	ReferralError,
	type UnknownErrorCode,
} from "./errors.js";
export type { components, paths } from "./openapi.js";
export type { CallOptions, Input, OperationName, Output } from "./types.js";
export { verifyWebhook, type WebhookEvent, type WebhookHeaders, WebhookVerificationError } from "./webhook.js";
