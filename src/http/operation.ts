import type { z } from "zod";
import type { App } from "../db/apps";

/** What an operation handler gets besides its validated input. */
export interface OperationContext {
	env: Env;
	app: App;
	/** Origin of the request, e.g. `http://127.0.0.1:8787`: the default base of share links. */
	origin: string;
	waitUntil(promise: Promise<unknown>): void;
	/** The request's Idempotency-Key and body fingerprint, for operations that hand them to a ledger (see idempotency-key.ts). */
	idempotency?: { key: string; fingerprint: string };
}

/** Fields of a successful response besides `success`; `message` defaults to "Success". */
export type OperationResult = { message?: string | null } & Record<string, unknown>;

/** One public operation: its request schema (which documents it) and its handler. */
export interface Operation<S extends z.ZodType = z.ZodType> {
	schema: S;
	/** Changes state: takes an `Idempotency-Key` header (http/idempotency-key.ts). */
	mutating?: boolean;
	handle(ctx: OperationContext, input: z.output<S>): Promise<OperationResult>;
}

/** Declares an operation with its input type inferred from the schema. */
export function defineOperation<S extends z.ZodType>(operation: Operation<S>): Operation<S> {
	return operation;
}
