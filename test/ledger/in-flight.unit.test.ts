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

	it("an event carried by a send stays held when the entry goes again at a newer version, until that send is acknowledged", () => {
		const held = new InFlight();
		held.hold([{ id: 1, ref: "projection:1", version: 1, eventid: "evt_a" }], 1_000);
		expect(held.eventHeld(1, "projection:1", "evt_a", 0)).toBe(true);
		// Sent again at version 2 without the event (it is held): the event's hold is kept.
		held.hold([{ id: 1, ref: "projection:1", version: 2, eventid: null }], 2_000);
		expect(held.eventHeld(1, "projection:1", "evt_a", 500)).toBe(true);
		// The first send's acknowledgement: the event went; the entry stays held at version 2.
		held.release([{ id: 1, ref: "projection:1", version: 1, eventid: "evt_a" }]);
		expect(held.eventHeld(1, "projection:1", "evt_a", 500)).toBe(false);
		expect(JSON.parse(held.heldJson(500))).toEqual([[1, "projection:1", 2]]);
		held.release([{ id: 1, ref: "projection:1", version: 2, eventid: null }]);
		expect(held.heldJson(500)).toBe("[]");
	});

	it("the newer send acknowledged first keeps the entry held until the event's hold ends; the hold ends with it", () => {
		const held = new InFlight();
		held.hold([{ id: 1, ref: "projection:1", version: 1, eventid: "evt_a" }], 1_000);
		held.hold([{ id: 1, ref: "projection:1", version: 2, eventid: null }], 2_000);
		held.release([{ id: 1, ref: "projection:1", version: 2, eventid: null }]);
		// Not sent again and again without its event meanwhile.
		expect(JSON.parse(held.heldJson(999))).toEqual([[1, "projection:1", 2]]);
		expect(held.earliestEnd(999)).toBe(1_000);
		expect(held.heldJson(1_000)).toBe("[]");
		expect(held.eventHeld(1, "projection:1", "evt_a", 1_000)).toBe(false);
	});

	it("an event hold names its entry: another ref with the same id is not held", () => {
		const held = new InFlight();
		held.hold([{ id: 1, ref: "projection:1", version: 1, eventid: "evt_a" }], 1_000);
		expect(held.eventHeld(1, "projection:9", "evt_a", 0)).toBe(false);
		expect(held.eventHeld(1, "projection:1", "evt_b", 0)).toBe(false);
	});
});
