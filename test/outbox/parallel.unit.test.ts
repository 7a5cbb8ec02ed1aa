import { describe, expect, it } from "vitest";
import { waitWithin } from "../../src/outbox/detach";
import { forEachLimited, interleaveByKey, startLimited } from "../../src/outbox/parallel";

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

/** A promise and its resolver, for steering work by hand. */
function gate() {
	let open = () => {};
	const opened = new Promise<void>((resolve) => {
		open = resolve;
	});
	return { opened, open };
}

describe("startLimited", () => {
	it("settles each item's promise when that item ends, and starts the next one on the freed lane only", async () => {
		const gates = [gate(), gate(), gate()];
		const started: number[] = [];
		const ended: number[] = [];
		const finished = startLimited([0, 1, 2], 2, async (i) => {
			started.push(i);
			await gates[i]!.opened;
		});
		finished.forEach((p, i) => void p.then(() => ended.push(i)));
		await Promise.resolve();
		expect(started).toEqual([0, 1]);
		gates[1]!.open();
		await finished[1];
		expect(ended).toEqual([1]);
		// Item 0 still runs; item 2 took item 1's lane.
		await Promise.resolve();
		expect(started).toEqual([0, 1, 2]);
		gates[2]!.open();
		gates[0]!.open();
		await Promise.all(finished);
		expect(ended.sort()).toEqual([0, 1, 2]);
	});

	it("rejects only the item whose work threw", async () => {
		const finished = startLimited([0, 1], 1, async (i) => {
			if (i === 0) throw new Error("boom");
		});
		await expect(finished[0]).rejects.toThrow("boom");
		await expect(finished[1]).resolves.toBeUndefined();
	});
});

describe("waitWithin (the consumer's detached attempts)", () => {
	it("stops waiting at the budget for work that has not ended", async () => {
		const never = new Promise<void>(() => {});
		const started = Date.now();
		await waitWithin([never], 20, []);
		expect(Date.now() - started).toBeLessThan(5_000);
	});

	it("does not wait for the budget when everything ended", async () => {
		let waited = false;
		await Promise.race([waitWithin([Promise.resolve()], 60_000, []), new Promise((r) => setTimeout(r, 5_000)).then(() => (waited = true))]);
		expect(waited).toBe(false);
	});

	it("waits past the budget for the work that may not be detached, and survives a rejection", async () => {
		const last = gate();
		let returned = false;
		const waiting = waitWithin([new Promise<void>(() => {}), last.opened, Promise.reject(new Error("x"))], 0, [last.opened]).then(() => {
			returned = true;
		});
		await new Promise((r) => setTimeout(r, 20));
		expect(returned).toBe(false);
		last.open();
		await waiting;
		expect(returned).toBe(true);
	});
});
