import { describe, expect, it } from "vitest";
import { forgottenSeqs, PITR_WINDOW_MS, pitrUnavailable, restoreEpoch, restoreTimeError } from "../../src/ledger/restore-plan";

/** Issue 51: the pure parts of a ledger's point-in-time restore. */

const NOW = Date.parse("2026-11-29T09:00:00Z");

describe("restoreTimeError", () => {
	it("takes a past time within the 30 days point-in-time recovery keeps", () => {
		expect(restoreTimeError(NOW - 5 * 60_000, NOW)).toBeNull();
		expect(restoreTimeError(NOW, NOW)).toBeNull();
		expect(restoreTimeError(NOW - PITR_WINDOW_MS + 120_000, NOW)).toBeNull();
	});

	it("refuses the future, the window's last minute and beyond, and what is not a time", () => {
		expect(restoreTimeError(NOW + 1, NOW)).toMatch(/future/);
		expect(restoreTimeError(NOW - PITR_WINDOW_MS + 30_000, NOW)).toMatch(/30 days/);
		expect(restoreTimeError(NOW - 31 * 86_400_000, NOW)).toMatch(/30 days/);
		expect(restoreTimeError(Number.NaN, NOW)).toMatch(/ISO 8601/);
	});
});

describe("restoreEpoch", () => {
	it("is above every version the ledger sent before the restore, and above the restored rows' own", () => {
		// A first restore: versions are small, the epoch is the time in ms.
		expect(restoreEpoch(NOW, 12, 3)).toBe(NOW);
		// A second restore within the same ms as a ledger whose versions the first one raised: still above them.
		const raised = NOW + 40;
		expect(restoreEpoch(NOW, raised, 3)).toBe(raised + 1);
		expect(restoreEpoch(NOW, 0, raised)).toBe(raised + 1);
		for (const [former, restored] of [
			[0, 0],
			[7, 2],
			[NOW + 5, NOW + 1],
		] as const) {
			const epoch = restoreEpoch(NOW, former, restored);
			// Every restored row, set to the epoch, is newer than anything sent before and than its own version.
			expect(epoch).toBeGreaterThan(former);
			expect(epoch).toBeGreaterThan(restored);
		}
	});

	it("stays near the time in ms however many times a ledger is restored (never doubling toward 2^53)", () => {
		let version = 3;
		for (let restore = 1; restore <= 1000; restore++) version = restoreEpoch(NOW + restore, version, version);
		expect(version).toBeLessThan(NOW + 2000);
	});
});

describe("forgottenSeqs", () => {
	it("names the reward numbers the restored ledger no longer has, or none", () => {
		expect(forgottenSeqs(3, 7)).toEqual({ from: 4, to: 7 });
		expect(forgottenSeqs(0, 2)).toEqual({ from: 1, to: 2 });
		expect(forgottenSeqs(5, 5)).toBeNull();
		expect(forgottenSeqs(5, 0)).toBeNull();
	});
});

describe("pitrUnavailable", () => {
	it("tells a runtime without point-in-time recovery from a refused bookmark", () => {
		expect(pitrUnavailable("This Durable Object's storage back-end does not implement point-in-time recovery.")).toBe(true);
		expect(pitrUnavailable("Invalid bookmark")).toBe(false);
		expect(pitrUnavailable("timestamp is more than 30 days in the past")).toBe(false);
	});
});
