/**
 * A short breaker per shard, per isolate (issue 50, docs/scaling.md "Per-shard
 * health"). A D1 database runs one query at a time; when its queue is full it
 * answers `overloaded`, and every request that asks again adds to that queue.
 * So once a shard has refused BREAKER.threshold round trips within
 * BREAKER.windowMs, this isolate stops asking it for BREAKER.openMs: its
 * requests answer 503 `service_busy` at once (as the shard itself would), and
 * the other shards go on serving. Then one round trip is let through (half
 * open): a success closes the breaker, a failure opens it again at once.
 *
 * Shards only: the control database answers every request (authentication),
 * so failing it fast would turn a blip into an outage of everything; its
 * one read retry (d1-availability.ts) stays its only defence.
 *
 * The state is kept per binding object (the isolate's env holds one per
 * shard), so a binding swapped in by a test never shares it.
 */

export const BREAKER = {
	/** Failures within the window that open the breaker: one refused read and its retry count two. */
	threshold: 5,
	windowMs: 1_000,
	/** How long an open breaker refuses without asking: about D1's own `Retry-After` (http/errors.ts says 2 s). */
	openMs: 2_000,
} as const;

export type BreakerState =
	| { kind: "closed"; failures: readonly number[] }
	| { kind: "open"; until: number }
	/** `probeSince`: when the one probe went (a probe that never answers is given up after BREAKER.openMs, and another goes). */
	| { kind: "half_open"; probeSince: number };

export const CLOSED: BreakerState = { kind: "closed", failures: [] };

/** Whether a round trip may go to the database at `now`, and the state after letting it (a half-open breaker lets one probe). Pure. */
export function admit(state: BreakerState, now: number): { go: boolean; state: BreakerState } {
	if (state.kind === "closed") return { go: true, state };
	if (state.kind === "open") {
		if (now < state.until) return { go: false, state };
		return { go: true, state: { kind: "half_open", probeSince: now } };
	}
	// Half open: one probe at a time; the others are refused until it answers.
	if (now - state.probeSince < BREAKER.openMs) return { go: false, state };
	return { go: true, state: { kind: "half_open", probeSince: now } };
}

/** The state after a round trip answered (`ok`) or failed because the database was unavailable. Pure. */
export function settle(state: BreakerState, ok: boolean, now: number): BreakerState {
	if (ok) return state.kind === "closed" && state.failures.length === 0 ? state : CLOSED;
	if (state.kind === "half_open") return { kind: "open", until: now + BREAKER.openMs };
	if (state.kind === "open") return state;
	const failures = [...state.failures.filter((at) => now - at < BREAKER.windowMs), now];
	return failures.length >= BREAKER.threshold ? { kind: "open", until: now + BREAKER.openMs } : { kind: "closed", failures };
}

const states = new WeakMap<object, BreakerState>();

/** The breaker of one binding: `admit` before a round trip, `settle` after it. */
export function breakerOf(binding: object): { admit(now: number): boolean; settle(ok: boolean, now: number): void } {
	return {
		admit(now) {
			const decision = admit(states.get(binding) ?? CLOSED, now);
			states.set(binding, decision.state);
			return decision.go;
		},
		settle(ok, now) {
			states.set(binding, settle(states.get(binding) ?? CLOSED, ok, now));
		},
	};
}
