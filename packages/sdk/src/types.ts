import type { paths } from "./openapi.js";

/** The operations of the served OpenAPI document, by their lower-case name. */
export type OperationName = {
	[P in keyof paths]: P extends `/saas/v1_0/${infer Name}` ? Name : never;
}[keyof paths];

type Post<Name extends OperationName> = paths[`/saas/v1_0/${Name}`]["post"];

/** An operation's request body without the credentials, which the client adds. */
export type Input<Name extends OperationName> = Omit<Post<Name>["requestBody"]["content"]["application/json"], "apikey" | "privatekey">;

/** An operation's success answer. */
export type Output<Name extends OperationName> = Post<Name>["responses"][200]["content"]["application/json"];

/** Per-call options. */
export interface CallOptions {
	/** Sent as `Idempotency-Key` on every attempt of a changing call; default: a random UUID per call. */
	idempotencyKey?: string;
	/** Cancels the call (and its retries). */
	signal?: AbortSignal;
}
