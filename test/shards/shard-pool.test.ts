import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
	directoryMismatch,
	everyShard,
	forgetShardDirectory,
	ShardConfigError,
	shardFor,
	shardNumberFor,
	shardPool,
} from "../../src/db/shards";
import { SHARD_HASH, shardIndex } from "../../src/domain/shard";
import { countingD1, newMetrics, withBindings } from "../../src/instrument/d1-metrics";

// The fixed pool of D1 shards bound in wrangler.toml (issue 50): 4 in every
// test, each its own database beside the control database DB. Scratch tables
// of tests on the shards are named test_* (the query-plan guard leaves them
// out of the shard schema).

describe("the shard pool of wrangler.toml", () => {
	afterEach(() => forgetShardDirectory());

	it("binds 4 shards, each its own D1 database with the shard schema, none of them the control database", async () => {
		expect(env.SHARD_COUNT).toBe("4");
		const shards = everyShard(env);
		expect(shards).toHaveLength(4);
		expect(new Set([env.DB, ...shards]).size).toBe(5);
		await Promise.all(shards.map((db) => db.prepare("CREATE TABLE IF NOT EXISTS test_pool_probe (k TEXT PRIMARY KEY)").run()));
		const key = `probe-${crypto.randomUUID()}`;
		await (await shardFor(env, "app_pool", key)).prepare("INSERT INTO test_pool_probe (k) VALUES (?)").bind(key).run();
		const holding = [];
		for (const [n, db] of shards.entries()) {
			if (await db.prepare("SELECT 1 AS one FROM test_pool_probe WHERE k = ?").bind(key).first()) holding.push(n);
			// Migrated as a shard (migrations-shard/), never with the control schema.
			expect(await db.prepare("SELECT shard, shard_count, hash FROM shard_identity").first()).toEqual({
				shard: n,
				shard_count: 4,
				hash: SHARD_HASH,
			});
			expect(await db.prepare("SELECT name FROM sqlite_master WHERE name = 'users'").first()).toBeNull();
		}
		expect(holding).toEqual([shardIndex(4, "app_pool", key)]);
		expect(await env.DB.prepare("SELECT shard_count, hash FROM shard_directory").first()).toEqual({ shard_count: 4, hash: SHARD_HASH });
	});

	it("routes (app, key) by the fixed hash, the same shard every time", async () => {
		const pool = await shardPool(env);
		for (let i = 0; i < 200; i++) {
			const n = shardIndex(4, "app_route", `user-${i}`);
			expect(await shardNumberFor(env, "app_route", `user-${i}`)).toBe(n);
			expect(pool.numberFor("app_route", `user-${i}`)).toBe(n);
			expect(await shardFor(env, "app_route", `user-${i}`)).toBe(everyShard(env)[n]);
		}
	});

	it("refuses to route when SHARD_COUNT and the bindings disagree", async () => {
		const withCount = (count: string) => ({ ...env, SHARD_COUNT: count });
		await expect(shardFor(withCount("5"), "a", "b")).rejects.toThrow(/SHARD_COUNT is 5 but SHARD_4 is not a D1 binding/);
		await expect(shardFor(withCount("3"), "a", "b")).rejects.toThrow(/SHARD_COUNT is 3 but SHARD_3 is bound too/);
		for (const count of ["0", "x", "", "2.5"]) expect(() => everyShard(withCount(count)), count).toThrow(ShardConfigError);
		const { SHARD_2: _missing, ...withoutTwo } = env;
		expect(() => everyShard(withoutTwo)).toThrow(/SHARD_2 is not a D1 binding/);
	});
});

describe("the Worker's check of the shard directory (once per isolate)", () => {
	afterEach(() => forgetShardDirectory());

	it("reads the directory once, then routes without a round trip", async () => {
		const m = newMetrics();
		const counted = withBindings(env, { DB: countingD1(env.DB, m) });
		await shardPool(counted);
		expect(m.d1RoundTrips).toBe(1);
		for (let i = 0; i < 20; i++) await shardFor(counted, "app_once", `user-${i}`);
		await shardPool(withBindings(env, { DB: countingD1(env.DB, m) }));
		expect(m.d1RoundTrips).toBe(1);
	});

	it("refuses, and logs once, a Worker whose bindings agree with its SHARD_COUNT but not with the directory", async () => {
		// Three shards bound and SHARD_COUNT 3, as a bare `wrangler deploy` of an edited wrangler.toml would run, against a
		// directory of 4: every key would go to another shard.
		const { SHARD_3: _gone, ...rest } = env;
		const three = { ...rest, SHARD_COUNT: "3" };
		expect(everyShard(three)).toHaveLength(3);
		const log = vi.spyOn(console, "error").mockImplementation(() => {});
		try {
			await expect(shardFor(three, "app_x", "user-1")).rejects.toThrow(ShardConfigError);
			await expect(shardPool(three)).rejects.toThrow(/shard directory records 4 shards by fnv1a32-fmix32, but this Worker has 3/);
			const lines = log.mock.calls.map((args) => String(args[0])).filter((line) => line.includes("shard routing refused"));
			expect(lines).toHaveLength(1);
			expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ msg: "shard routing refused" });
		} finally {
			log.mockRestore();
		}
		// The Worker's own configuration still routes.
		expect(await shardNumberFor(env, "app_x", "user-1")).toBe(shardIndex(4, "app_x", "user-1"));
	});

	it("refuses a missing directory and another hash (the comparison)", () => {
		expect(directoryMismatch({ shard_count: 4, hash: SHARD_HASH }, 4)).toBeNull();
		expect(directoryMismatch(null, 4)).toMatch(/no shard directory: run `npm run migrate`/);
		expect(directoryMismatch({ shard_count: 4, hash: "fnv1a32" }, 4)).toMatch(
			/records 4 shards by fnv1a32, but this Worker has 4 by fnv1a32-fmix32/,
		);
		expect(directoryMismatch({ shard_count: 32, hash: SHARD_HASH }, 4)).toMatch(/records 32 shards/);
	});
});
