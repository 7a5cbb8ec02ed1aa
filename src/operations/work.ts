import type { App } from "../db/apps";
import type { WorkFailure, WorkOutcome } from "../domain/outcome";
import { ApiError } from "../http/errors";

/**
 * What the shared work (conversion-work.ts, reversal-work.ts,
 * status-change.ts) needs to run, and the two ways its typed outcome
 * (domain/outcome.ts) leaves: an HTTP handler turns a failure back into the
 * ApiError it stands for (the same answer, byte for byte, as when the work
 * threw it), a queue consumer acks or retries on its kind. No request is
 * needed, so no consumer builds one.
 */

/** Who asks: the app, and where background work goes. */
export interface WorkContext {
	env: Env;
	app: App;
	waitUntil(promise: Promise<unknown>): void;
}

/**
 * An expected failure as an outcome: `retry_later` when a retry may pass
 * (the answer says `retryable`, as `reward_locked` and `service_busy` do,
 * or it is a 429 or 5xx), else `refused`.
 */
export function failureOf(error: ApiError): WorkFailure {
	const retry = error.extra.retryable === true || error.status === 429 || error.status >= 500;
	return {
		kind: retry ? "retry_later" : "refused",
		code: error.errorcode,
		message: error.message,
		status: error.status,
		details: error.extra,
		headers: error.headers,
	};
}

/** Runs work that throws ApiError for its expected failures, answering them as outcomes; anything else still throws. */
export async function outcomeOf<T>(run: () => Promise<WorkOutcome<T>>): Promise<WorkOutcome<T>> {
	try {
		return await run();
	} catch (error) {
		if (error instanceof ApiError) return failureOf(error);
		throw error;
	}
}

/** The ApiError a failure stands for: what the HTTP handler throws, the same answer the work's own throw gave. */
export function failureError(failure: WorkFailure): ApiError {
	return new ApiError(
		failure.status as ApiError["status"],
		failure.code as ApiError["errorcode"],
		failure.message,
		failure.details,
		failure.headers ?? {},
	);
}

/** For HTTP handlers: the value of an applied or duplicate outcome, else its failure thrown as the ApiError it stands for. */
export function valueOrThrow<T>(outcome: WorkOutcome<T>): T {
	if (outcome.kind === "applied" || outcome.kind === "duplicate") return outcome.value;
	throw failureError(outcome);
}
