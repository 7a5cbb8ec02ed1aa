import { describe, expect, it } from "vitest";
import { seqOfRewardId, userkeyOfRewardId } from "../../src/domain/ledger-ids";
import { backoffMs } from "../../src/ledger/outbox";
import { allocateOldestFirst, available } from "../../src/ledger/redeem";

describe("allocateOldestFirst", () => {
	const candidates = [
		{ seq: 5, remaining: 300 },
		{ seq: 2, remaining: 1000 },
		{ seq: 9, remaining: 0 },
		{ seq: 7, remaining: 200 },
	];

	it("takes the oldest first and the last one in part", () => {
		expect(allocateOldestFirst(candidates, 1100)).toEqual([
			{ seq: 2, take: 1000 },
			{ seq: 5, take: 100 },
		]);
	});

	it("can take everything exactly", () => {
		expect(allocateOldestFirst(candidates, 1500)).toEqual([
			{ seq: 2, take: 1000 },
			{ seq: 5, take: 300 },
			{ seq: 7, take: 200 },
		]);
		expect(available(candidates)).toBe(1500);
	});

	it("refuses whole when there is not enough", () => {
		expect(allocateOldestFirst(candidates, 1501)).toBeNull();
		expect(allocateOldestFirst([], 1)).toBeNull();
	});
});

describe("outbox backoff", () => {
	it("grows and is capped at an hour", () => {
		expect(backoffMs(1)).toBe(5_000);
		expect(backoffMs(2)).toBe(15_000);
		expect(backoffMs(3)).toBe(45_000);
		expect(backoffMs(50)).toBe(3_600_000);
	});
});

describe("reward ids", () => {
	const userkey = "uabcdefghij0123456789".slice(0, 20);
	it("carry the owner's user key and number", () => {
		expect(userkeyOfRewardId(`${userkey}-12`)).toBe(userkey);
		expect(seqOfRewardId(`${userkey}-12`, userkey)).toBe(12);
	});
	it("reject anything else", () => {
		for (const id of [
			"",
			"12",
			`${userkey}-0`,
			`${userkey}-01`,
			`${userkey}-`,
			`${userkey}12`,
			`x${userkey.slice(1)}-1`,
			`${userkey.toUpperCase()}-1`,
			`${userkey}-1-2`,
		]) {
			expect(userkeyOfRewardId(id)).toBeNull();
		}
		expect(seqOfRewardId(`${userkey}-12`, "u0000000000000000000")).toBeNull();
	});
});
