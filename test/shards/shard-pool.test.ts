import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { everyShard, ShardConfigError, shardFor, shardNumberFor } from "../../src/db/shards";
import { SHARD_HASH, shardIndex } from "../../src/domain/shard";

// The fixed pool of D1 shards bound in wrangler.toml (issue 50): 4 in every
// test, each its own database beside the control database DB.

describe("the shard pool of wrangler.toml", () => {
	it("binds 4 shards, each its own D1 database with the shard schema, none of them the control database", async () => {
		expect(env.SHARD_COUNT).toBe("4");
		const shards = everyShard(env);
		expect(shards).toHaveLength(4);
		expect(new Set([env.DB, ...shards]).size).toBe(5);
		await Promise.all(shards.map((db) => db.prepare("CREATE TABLE IF NOT EXISTS pool_probe (k TEXT PRIMARY KEY)").run()));
		const key = `probe-${crypto.randomUUID()}`;
		await shardFor(env, "app_pool", key).prepare("INSERT INTO pool_probe (k) VALUES (?)").bind(key).run();
		const holding = [];
		for (const [n, db] of shards.entries()) {
			if (await db.prepare("SELECT 1 AS one FROM pool_probe WHERE k = ?").bind(key).first()) holding.push(n);
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

	it("routes (app, key) by the fixed hash, the same shard every time", () => {
		for (let i = 0; i < 200; i++) {
			const n = shardIndex(4, "app_route", `user-${i}`);
			expect(shardNumberFor(env, "app_route", `user-${i}`)).toBe(n);
			expect(shardFor(env, "app_route", `user-${i}`)).toBe(everyShard(env)[n]);
		}
	});

	it("refuses to route when SHARD_COUNT and the bindings disagree", () => {
		const withCount = (count: string) => ({ ...env, SHARD_COUNT: count });
		expect(() => shardFor(withCount("5"), "a", "b")).toThrow(/SHARD_COUNT is 5 but SHARD_4 is not a D1 binding/);
		expect(() => shardFor(withCount("3"), "a", "b")).toThrow(/SHARD_COUNT is 3 but SHARD_3 is bound too/);
		for (const count of ["0", "x", "", "2.5"]) expect(() => everyShard(withCount(count)), count).toThrow(ShardConfigError);
		const { SHARD_2: _missing, ...withoutTwo } = env;
		expect(() => everyShard(withoutTwo)).toThrow(/SHARD_2 is not a D1 binding/);
	});
});
