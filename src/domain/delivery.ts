/**
 * What delivering an outbox event involves, as plain data (issue 31): the
 * app's part of a delivery, one attempt's record and an endpoint's circuit
 * breaker. Stored by src/db/, decided by src/outbox/; here so that the
 * stores take no types from the layer above them.
 */

/** What the app contributes to a delivery; null when the app no longer exists. */
export interface DeliveryApp {
	webhookurl: string | null;
	webhookSecret: string;
	emailsender: string | null;
	/** False for an app's test twin (docs/test-mode.md). */
	livemode: boolean;
}

export type AttemptOutcome = "delivered" | "failed" | "skipped";

export interface AttemptRecord {
	eventid: string;
	attempt: number;
	outcome: AttemptOutcome;
	responseCode: number | null;
	durationMs: number;
	error: string | null;
}

export interface BreakerState {
	endpoint: string;
	/** Consecutive failures (attempts that were made). */
	failures: number;
	/** Times opened in a row without a success between (for the growing cool-down). */
	opens: number;
	/** Epoch ms until which the breaker is open; null when closed. */
	openUntil: number | null;
	/** Epoch ms until which a probe is under way; null when none. */
	probeUntil: number | null;
	lastError: string | null;
	lastFailureAt: string | null;
	version: number;
}
