import { describe, expect, it } from "vitest";
import { admit, BREAKER, type BreakerState, CLOSED, settle } from "../../src/instrument/d1-breaker";

/** Fails `n` round trips at `at`, `at + step`, ... and returns the state. */
function failures(state: BreakerState, n: number, at: number, step = 1): BreakerState {
	let s = state;
	for (let i = 0; i < n; i++) s = settle(s, false, at + i * step);
	return s;
}

describe("a shard's breaker", () => {
	it("stays closed below the threshold, and a success forgets the failures", () => {
		const s = failures(CLOSED, BREAKER.threshold - 1, 0);
		expect(s.kind).toBe("closed");
		expect(admit(s, 10).go).toBe(true);
		expect(settle(s, true, 10)).toEqual(CLOSED);
		expect(failures(settle(s, true, 10), BREAKER.threshold - 1, 11).kind).toBe("closed");
	});

	it("counts only the failures of the last window", () => {
		const spread = failures(CLOSED, BREAKER.threshold, 0, BREAKER.windowMs / (BREAKER.threshold - 1) + 1);
		expect(spread.kind).toBe("closed");
		const close = failures(CLOSED, BREAKER.threshold, 0, 10);
		expect(close).toEqual({ kind: "open", until: 40 + BREAKER.openMs });
	});

	it("refuses while open, lets one probe through after, and a failed probe opens it again", () => {
		const open = failures(CLOSED, BREAKER.threshold, 0);
		const openUntil = 4 + BREAKER.openMs;
		expect(admit(open, openUntil - 1)).toEqual({ go: false, state: open });
		const probe = admit(open, openUntil);
		expect(probe.go).toBe(true);
		expect(admit(probe.state, openUntil + 1).go).toBe(false);
		expect(settle(probe.state, false, openUntil + 5)).toEqual({ kind: "open", until: openUntil + 5 + BREAKER.openMs });
		expect(settle(probe.state, true, openUntil + 5)).toEqual(CLOSED);
	});

	it("gives up a probe that never answered and sends another", () => {
		const open = failures(CLOSED, BREAKER.threshold, 0);
		const probe = admit(open, 10_000);
		expect(admit(probe.state, 10_000 + BREAKER.openMs - 1).go).toBe(false);
		expect(admit(probe.state, 10_000 + BREAKER.openMs).go).toBe(true);
	});
});
