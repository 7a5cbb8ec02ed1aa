import { describe, expect, it } from "vitest";
import { SHARD_HASH, shardBinding, shardHash, shardIndex } from "../../src/domain/shard";

// The fixed hash of (app, key) that picks a D1 shard (issue 50). Recorded by
// name in the control database: a change of its values would move every key.

/** Counts per shard of `keys` among `count` shards. */
function spread(count: number, keys: [string, string][]): number[] {
	const counts = new Array<number>(count).fill(0);
	for (const [appid, key] of keys) counts[shardIndex(count, appid, key)] = (counts[shardIndex(count, appid, key)] ?? 0) + 1;
	return counts;
}

/** A seeded generator (mulberry32), so the "random" codes are the same every run. */
function seeded(seed: number) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

function within(counts: number[], total: number, tolerance: number) {
	const mean = total / counts.length;
	for (const [shard, n] of counts.entries()) {
		expect(Math.abs(n - mean), `shard ${shard}: ${n} against a mean of ${mean} (${counts.join(", ")})`).toBeLessThanOrEqual(
			tolerance * mean,
		);
	}
}

describe("shardHash: FNV-1a 32 of appid, 0, key, finished by fmix32", () => {
	it("keeps its values (computed apart, in Python, from the definition): a deployed directory depends on them", () => {
		expect(SHARD_HASH).toBe("fnv1a32-fmix32");
		expect(shardHash("app_1", "user-1")).toBe(2210634585);
		expect(shardHash("", "ABCD2345")).toBe(3795733399);
		expect(shardHash("app_ü", "é@example.com")).toBe(3141937060);
		expect([shardIndex(4, "app_1", "user-1"), shardIndex(32, "app_1", "user-1")]).toEqual([1, 25]);
	});

	it("keeps (app, key) pairs apart that would join into the same text", () => {
		expect(shardHash("ab", "c")).toBe(558897161);
		expect(shardHash("a", "bc")).toBe(4196258390);
	});

	it("spreads keys that differ only in the high bits of a byte (FNV-1a alone puts them on one shard of a power of two)", () => {
		// FNV-1a's low k bits depend only on the low k bits of each byte. These 14 letters agree in their low 2 bits,
		// so without the finisher all 196 keys land on one of 4 shards; with it, each shard has its share.
		const letters = [..."AEIMQUYaeimquy"];
		const keys = letters.flatMap((a) => letters.map((b): [string, string] => ["app", `user-${a}${b}`]));
		within(spread(4, keys), keys.length, 0.3);
		// a and A differ in bit 5 only: without the finisher a code and its other case share one of 32 shards, all 26.
		const apart = [..."abcdefghijklmnopqrstuvwxyz"].filter(
			(c) => shardIndex(32, "app", `code${c}`) !== shardIndex(32, "app", `code${c.toUpperCase()}`),
		);
		expect(apart.length).toBeGreaterThan(20);
	});

	it("refuses a shard count that is not a positive integer", () => {
		for (const count of [0, -1, 1.5, Number.NaN]) expect(() => shardIndex(count, "a", "b")).toThrow(RangeError);
		expect(shardIndex(1, "a", "b")).toBe(0);
		expect(shardBinding(3)).toBe("SHARD_3");
	});
});

describe("the spread over shards (issue 50: no shard holds all of one tenant)", () => {
	const apps = ["app_7f3a9c", "app_b41e02"];
	const userkeys: [string, string][] = apps.flatMap((appid) =>
		Array.from({ length: 5000 }, (_, i): [string, string] => [appid, `user-${i + 1}`]),
	);

	it("10,000 sequential userkeys over two apps: each of 4 shards within 20% of the mean, and each app's half too", () => {
		within(spread(4, userkeys), 10_000, 0.2);
		for (const appid of apps)
			within(
				spread(
					4,
					userkeys.filter(([a]) => a === appid),
				),
				5000,
				0.2,
			);
	});

	it("the same over the 32 shards of a deployment", () => {
		within(spread(32, userkeys), 10_000, 0.2);
	});

	it("emails and random referral codes (with no app: codes are unique across apps) spread as evenly", () => {
		const emails = apps.flatMap((appid) =>
			Array.from({ length: 5000 }, (_, i): [string, string] => [appid, `customer${i}@mail${i % 7}.example`]),
		);
		within(spread(4, emails), 10_000, 0.2);
		const random = seeded(50);
		const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
		const codes = Array.from({ length: 10_000 }, (): [string, string] => [
			"",
			Array.from({ length: 8 }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""),
		]);
		within(spread(4, codes), 10_000, 0.2);
		within(spread(32, codes), 10_000, 0.2);
	});
});
