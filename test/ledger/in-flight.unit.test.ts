import { describe, expect, it } from "vitest";
import { InFlight } from "../../src/ledger/in-flight";

/** The projection queue's in-memory holds (src/ledger/in-flight.ts): what the outbox's due query excludes, and when. */
describe("in-flight holds", () => {
	it("holds entries until their hold ends, then forgets them", () => {
		const held = new InFlight();
		held.hold(
			[
				{ id: 1, ref: "projection:1", version: 3 },
				{ id: 2, ref: "webhook:evt_a", version: null },
			],
			1_000,
		);
		expect(JSON.parse(held.heldJson(999))).toEqual([
			[1, "projection:1", 3],
			[2, "webhook:evt_a", null],
		]);
		expect(held.earliestEnd(999)).toBe(1_000);
		expect(held.heldJson(1_000)).toBe("[]");
		expect(held.earliestEnd(1_000)).toBeNull();
	});

	it("an acknowledgement releases its entries; the earliest end is that of the holds left", () => {
		const held = new InFlight();
		held.hold([{ id: 1, ref: "projection:1", version: 1 }], 500);
		held.hold([{ id: 2, ref: "audit:x", version: null }], 800);
		held.release([{ id: 1, ref: "projection:1", version: 1 }]);
		expect(JSON.parse(held.heldJson(0))).toEqual([[2, "audit:x", null]]);
		expect(held.earliestEnd(0)).toBe(800);
	});
});
