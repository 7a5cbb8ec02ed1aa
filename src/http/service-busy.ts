import type { MiddlewareHandler } from "hono";
import { everyD1Wrapped, isD1Unavailable, retryingReads } from "../instrument/d1-availability";
import { withBindings } from "../instrument/d1-metrics";
import { type ApiError, serviceBusy } from "./errors";

/**
 * D1 busy or down is a clean, retryable answer (issue 33): idempotent reads
 * are retried once (instrument/d1-availability.ts), and what still fails becomes 503
 * `service_busy` with `Retry-After` in every error handler (API, admin,
 * dashboard, pages), never a 500.
 */

const retrying = new WeakMap<Env, Env>();

/**
 * The env whose D1 bindings, the control database and every shard (issue 50),
 * each retry a failed read once and name themselves when they fail; made once
 * per env object (the isolate's env is one object). A failing shard fails only
 * the requests that use it.
 */
export function withRetryingReads(env: Env): Env {
	let wrapped = retrying.get(env);
	if (!wrapped) {
		wrapped = withBindings(env, everyD1Wrapped(env, retryingReads));
		retrying.set(env, wrapped);
	}
	return wrapped;
}

/** Hono middleware: this request's D1 retries a failed read once. */
export const retryReads: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
	c.env = withRetryingReads(c.env);
	await next();
};

/** The 503 `service_busy` an error stands for when D1 refused or lost a query; null for any other error. */
export function busyError(err: unknown): ApiError | null {
	return isD1Unavailable(err) ? serviceBusy() : null;
}
