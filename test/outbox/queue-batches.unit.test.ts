import { describe, expect, it } from "vitest";
import { outboxMessage, webhookEvent } from "../../src/outbox/events";
import { CARRIED_MESSAGE_BYTES, jsonBytes, packBatches, QUEUE_BATCH_BYTES, QUEUE_BATCH_MESSAGES } from "../../src/outbox/queue-batches";

describe("queue batches within the Queues limits (issue 20 item 3)", () => {
	it("splits by count: 250 small messages go in batches of 100, 100 and 50, in order", () => {
		const items = Array.from({ length: 250 }, (_, i) => i);
		const batches = packBatches(items, () => 50);
		expect(batches.map((b) => b.length)).toEqual([QUEUE_BATCH_MESSAGES, QUEUE_BATCH_MESSAGES, 50]);
		expect(batches.flat()).toEqual(items);
	});

	it("splits by bytes: no batch of 60 KB messages passes the batch budget", () => {
		const batches = packBatches(
			Array.from({ length: 20 }, (_, i) => i),
			() => 60_000,
		);
		expect(batches.every((b) => b.length * 60_000 <= QUEUE_BATCH_BYTES)).toBe(true);
		expect(batches.flat()).toHaveLength(20);
	});

	it("gives a message alone over the budget a batch of its own, never an empty batch", () => {
		expect(packBatches([1, 2, 3], (n) => (n === 2 ? QUEUE_BATCH_BYTES + 1 : 10))).toEqual([[1], [2], [3]]);
		expect(packBatches([], () => 1)).toEqual([]);
	});

	it("carries an event up to the message budget in UTF-8 bytes, and a larger one by id only", () => {
		const small = webhookEvent("app_1", "reward.redeemed", { note: "x".repeat(1000) });
		expect(outboxMessage(small).event).toBeDefined();
		// 30,000 characters but 90,000 bytes: measured in bytes, it travels by id.
		const wide = webhookEvent("app_1", "reward.redeemed", { note: "€".repeat(30_000) });
		expect(outboxMessage(wide)).toEqual({ eventid: wide.eventid });
		expect(jsonBytes(outboxMessage(wide))).toBeLessThan(CARRIED_MESSAGE_BYTES);
	});
});
