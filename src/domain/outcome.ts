/**
 * What a piece of shared work (record a conversion, reverse one, change a
 * status) did, as a value (issue 31): the HTTP handlers map it to a response,
 * the queue consumers to ack or retry, so neither guesses from status codes.
 *
 * - applied: it changed something;
 * - duplicate: it had been done before (a repeat of the same key), nothing changed;
 * - retry_later: it could not run now and may pass later (a lock held by
 *   another change, a dependency down): a consumer retries, HTTP answers 409/503;
 * - refused: a retry would not change it; `status` and `code` are what HTTP answers.
 */
export type WorkOutcome<T> = { kind: "applied"; value: T } | { kind: "duplicate"; value: T } | WorkFailure;

/** A failure: `status`, `code`, `message`, `details` and `headers` (a 503's Retry-After) are what HTTP answers. */
export interface WorkFailure {
	kind: "retry_later" | "refused";
	code: string;
	message: string;
	status: number;
	details: Record<string, unknown>;
	headers?: Record<string, string>;
}
