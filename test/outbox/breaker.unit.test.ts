import { describe, expect, it } from "vitest";
import {
	BASE_COOLDOWN_MS,
	breakerAfter,
	breakerGate,
	breakerStatus,
	closedState,
	cooldownMs,
	FAILURE_THRESHOLD,
	MAX_COOLDOWN_MS,
	PROBE_LEASE_MS,
	stateFor,
} from "../../src/outbox/breaker";

const url = "https://hooks.example.com/x";

/** Applies `n` failures at time `now`. */
function failTimes(n: number, now = 1_000) {
	let state = closedState(url);
	for (let i = 0; i < n; i++) state = breakerAfter(state, false, now, "timed out") ?? state;
	return state;
}

describe("webhook circuit breaker", () => {
	it("stays closed below the threshold and opens on the 5th consecutive failure", () => {
		expect(breakerStatus(failTimes(FAILURE_THRESHOLD - 1), 1_000)).toBe("closed");
		const open = failTimes(FAILURE_THRESHOLD);
		expect(breakerStatus(open, 1_000)).toBe("open");
		expect(open.openUntil).toBe(1_000 + BASE_COOLDOWN_MS);
		expect(breakerGate(open, 2_000)).toEqual({ action: "wait", until: 1_000 + BASE_COOLDOWN_MS });
	});
	it("a success resets the count; a healthy success needs no write", () => {
		expect(breakerAfter(closedState(url), true, 1)).toBeNull();
		const reset = breakerAfter(failTimes(3), true, 1)!;
		expect(reset).toMatchObject({ failures: 0, openUntil: null });
		expect(breakerStatus(failTimes(FAILURE_THRESHOLD - 1, 1), 1)).toBe("closed");
	});
	it("after the cool-down lets one probe through; others wait for its lease", () => {
		const open = failTimes(FAILURE_THRESHOLD);
		const later = open.openUntil! + 1;
		const gate = breakerGate(open, later);
		expect(gate.action).toBe("probe");
		if (gate.action !== "probe") return;
		expect(gate.claim.probeUntil).toBe(later + PROBE_LEASE_MS);
		expect(breakerGate(gate.claim, later + 10)).toEqual({ action: "wait", until: later + PROBE_LEASE_MS });
		// A probe whose lease ran out (it crashed) lets the next one through.
		expect(breakerGate(gate.claim, later + PROBE_LEASE_MS + 1).action).toBe("probe");
	});
	it("a successful probe closes it; a failed one re-opens it for twice as long", () => {
		const open = failTimes(FAILURE_THRESHOLD);
		const later = open.openUntil! + 1;
		expect(breakerStatus(breakerAfter(open, true, later)!, later)).toBe("closed");
		const reopened = breakerAfter(open, false, later)!;
		expect(reopened.openUntil).toBe(later + 2 * BASE_COOLDOWN_MS);
		expect(cooldownMs(50)).toBe(MAX_COOLDOWN_MS);
	});
	it("failures of attempts that started before it opened do not extend the cool-down", () => {
		const open = failTimes(FAILURE_THRESHOLD);
		expect(breakerAfter(open, false, 2_000)!.openUntil).toBe(open.openUntil);
	});
	it("a new webhook URL starts closed", () => {
		const open = failTimes(FAILURE_THRESHOLD);
		expect(breakerStatus(stateFor(open, "https://new.example.com/"), 2_000)).toBe("closed");
		expect(stateFor(open, url)).toBe(open);
	});
});
