import type { BreakerState } from "../domain/delivery";
/**
 * Per-endpoint circuit breaker of webhook delivery: pure decisions, no I/O
 * (the state lives in D1, src/db/breakers.ts; the consumer calls
 * `breakerGate` before and `breakerAfter` after an attempt).
 *
 * - closed: deliveries are attempted; consecutive failures are counted and a
 *   success resets them.
 * - open: after FAILURE_THRESHOLD consecutive failures, the endpoint's
 *   deliveries are not attempted until the cool-down ends (they are retried
 *   later on the normal schedule, logged as not attempted).
 * - half-open: after the cool-down, ONE delivery is let through as a probe
 *   (claimed, so parallel deliveries do not all probe); its success closes
 *   the breaker, its failure opens it again for a longer cool-down.
 *
 * So a dead endpoint costs at most FAILURE_THRESHOLD timeouts plus one probe
 * per cool-down, instead of every delivery's timeout.
 */

export const FAILURE_THRESHOLD = 5;
/** First cool-down; each re-open in a row doubles it, up to MAX_COOLDOWN_MS. */
export const BASE_COOLDOWN_MS = 60_000;
export const MAX_COOLDOWN_MS = 30 * 60_000;
/** How long a probe claim holds off other probes (longer than a webhook timeout). */
export const PROBE_LEASE_MS = 30_000;

export type BreakerStatus = "closed" | "open" | "half_open";

export const closedState = (endpoint: string): BreakerState => ({
	endpoint,
	failures: 0,
	opens: 0,
	openUntil: null,
	probeUntil: null,
	lastError: null,
	lastFailureAt: null,
	version: 0,
});

/** The state that applies to `endpoint`: a stored state of another (older) URL counts as closed. */
export function stateFor(stored: BreakerState | null, endpoint: string): BreakerState {
	if (!stored) return closedState(endpoint);
	if (stored.endpoint !== endpoint) return { ...closedState(endpoint), version: stored.version };
	return stored;
}

export function breakerStatus(state: BreakerState, now: number): BreakerStatus {
	if (state.openUntil === null) return "closed";
	return now < state.openUntil ? "open" : "half_open";
}

export type Gate =
	/** Attempt it; nothing to record first. */
	| { action: "attempt" }
	/** Attempt it as the probe: first store `claim` (compare-and-set); if that fails, someone else probes: wait. */
	| { action: "probe"; claim: BreakerState }
	/** Do not attempt before `until` (epoch ms). */
	| { action: "wait"; until: number };

/** What to do with a delivery to this endpoint now. */
export function breakerGate(state: BreakerState, now: number): Gate {
	const status = breakerStatus(state, now);
	if (status === "closed") return { action: "attempt" };
	if (status === "open") return { action: "wait", until: state.openUntil! };
	if (state.probeUntil !== null && now < state.probeUntil) return { action: "wait", until: state.probeUntil };
	return { action: "probe", claim: { ...state, probeUntil: now + PROBE_LEASE_MS } };
}

export function cooldownMs(opens: number): number {
	return Math.min(BASE_COOLDOWN_MS * 2 ** Math.max(opens - 1, 0), MAX_COOLDOWN_MS);
}

/**
 * The state after an attempt ended (`ok` true when delivered), or null when
 * nothing changes (a success on a healthy endpoint: no write needed).
 */
export function breakerAfter(state: BreakerState, ok: boolean, now: number, error: string | null = null): BreakerState | null {
	if (ok) {
		if (state.failures === 0 && state.openUntil === null && state.opens === 0) return null;
		return { ...state, failures: 0, opens: 0, openUntil: null, probeUntil: null };
	}
	const failures = state.failures + 1;
	const base = {
		...state,
		failures,
		lastError: error?.slice(0, 300) ?? null,
		lastFailureAt: new Date(now).toISOString(),
		probeUntil: null,
	};
	const status = breakerStatus(state, now);
	// A failed probe re-opens at once; in the closed state, the threshold opens it.
	if (status === "half_open" || (status === "closed" && failures >= FAILURE_THRESHOLD)) {
		const opens = state.opens + 1;
		return { ...base, opens, openUntil: now + cooldownMs(opens) };
	}
	// Failures of attempts that started before it opened only add to the count.
	return base;
}

/** The breaker as the admin API and the delivery log show it. */
export function breakerView(state: BreakerState | null, now: number) {
	if (!state) return { state: "closed" as BreakerStatus, consecutivefailures: 0, openuntil: null, lasterror: null, lastfailureat: null };
	return {
		state: breakerStatus(state, now),
		endpoint: state.endpoint,
		consecutivefailures: state.failures,
		openuntil: state.openUntil === null ? null : new Date(state.openUntil).toISOString(),
		lasterror: state.lastError,
		lastfailureat: state.lastFailureAt,
	};
}
