import { describe, expect, it } from "vitest";
import { forEachLimited, interleaveByKey } from "../../src/outbox/parallel";

describe("interleaveByKey", () => {
	it("lets groups take turns in order of first appearance, keeping each group's order", () => {
		const items = ["h1", "h2", "h3", "a1", "h4", "b1", "a2"];
		expect(interleaveByKey(items, (s) => s[0]!)).toEqual(["h1", "a1", "b1", "h2", "a2", "h3", "h4"]);
	});

	it("keeps a single group and an empty list as they are", () => {
		expect(interleaveByKey(["x1", "x2"], (s) => s[0]!)).toEqual(["x1", "x2"]);
		expect(interleaveByKey([], String)).toEqual([]);
	});
});

describe("forEachLimited", () => {
	it("never runs more than the limit at once, starts in order, and runs every item", async () => {
		let running = 0;
		let most = 0;
		const started: number[] = [];
		// Seeded durations (no clock): each item waits a different number of turns of the event loop.
		const turns = [5, 1, 4, 2, 6, 3, 1, 2, 5, 1, 3, 4];
		await forEachLimited(
			turns.map((_, i) => i),
			5,
			async (i) => {
				started.push(i);
				running++;
				most = Math.max(most, running);
				for (let t = 0; t < turns[i]!; t++) await Promise.resolve();
				running--;
			},
		);
		expect(most).toBe(5);
		expect(started).toEqual(turns.map((_, i) => i));
	});

	it("runs fewer items than the limit all at once, and nothing for none", async () => {
		let most = 0;
		let running = 0;
		await forEachLimited([1, 2], 5, async () => {
			running++;
			most = Math.max(most, running);
			await Promise.resolve();
			running--;
		});
		expect(most).toBe(2);
		await forEachLimited([], 5, async () => {
			throw new Error("never called");
		});
	});
});
