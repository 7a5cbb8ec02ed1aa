import { SHARD_HASH, shardBinding, shardIndex } from "../domain/shard";

/**
 * The pool of D1 shards (issue 50, docs/scaling.md "Past one database"):
 * `SHARD_0` ... `SHARD_<n - 1>`, n = the environment's `SHARD_COUNT` var (4
 * locally and in every test, 32 deployed), bound in wrangler.toml beside the
 * control database `DB`. A binding is fixed at deploy time, so the pool is
 * too; `npm run migrate` records n and the hash in the control database's
 * `shard_directory` and refuses a deploy whose count differs.
 *
 * Phase 1 routes nothing yet: the tables move here in phase 2 (email,
 * account id and referral code to user; the per-user rows of the admin
 * views), each found by `shardFor` with the key its lookup has.
 */

/** What the pool needs of an environment: the count; the bindings are read by name. */
export interface ShardedEnv {
	SHARD_COUNT: string;
}

/** A wrangler.toml whose bindings disagree with SHARD_COUNT: every route would be wrong, so nothing routes. */
export class ShardConfigError extends Error {
	override name = "ShardConfigError";
}

const pools = new WeakMap<object, readonly D1Database[]>();

function isD1(value: unknown): value is D1Database {
	return (
		typeof value === "object" &&
		value !== null &&
		"prepare" in value &&
		typeof value.prepare === "function" &&
		"batch" in value &&
		typeof value.batch === "function"
	);
}

/**
 * Every shard of the environment, in order (the fan-out of an admin view).
 * Checked once per env object: SHARD_COUNT a positive integer, each of
 * SHARD_0 ... SHARD_<count - 1> a D1 binding, and no SHARD_<count> (a count
 * lower than the bindings would route keys away from their rows as surely as
 * a missing binding).
 */
export function everyShard(env: ShardedEnv): readonly D1Database[] {
	const known = pools.get(env);
	if (known) return known;
	const count = Number(env.SHARD_COUNT);
	if (!Number.isInteger(count) || count < 1)
		throw new ShardConfigError(`SHARD_COUNT must be a positive integer, got ${JSON.stringify(env.SHARD_COUNT)}`);
	const shards: D1Database[] = [];
	for (let i = 0; i < count; i++) {
		const binding: unknown = Reflect.get(env, shardBinding(i));
		if (!isD1(binding)) throw new ShardConfigError(`SHARD_COUNT is ${count} but ${shardBinding(i)} is not a D1 binding (wrangler.toml)`);
		shards.push(binding);
	}
	if (isD1(Reflect.get(env, shardBinding(count))))
		throw new ShardConfigError(`SHARD_COUNT is ${count} but ${shardBinding(count)} is bound too (wrangler.toml)`);
	const pool = Object.freeze(shards);
	pools.set(env, pool);
	return pool;
}

/** The shard number (0 to SHARD_COUNT - 1) of (appid, key): for grouping a batch's writes by shard, or naming a busy shard. */
export function shardNumberFor(env: ShardedEnv, appid: string, key: string): number {
	return shardIndex(everyShard(env).length, appid, key);
}

/** The D1 shard that holds (appid, key)'s rows, by SHARD_HASH of the pair. */
export function shardFor(env: ShardedEnv, appid: string, key: string): D1Database {
	const shards = everyShard(env);
	const shard = shards[shardIndex(shards.length, appid, key)];
	if (!shard) throw new ShardConfigError(`no shard for ${SHARD_HASH} of (${appid}, ${key})`);
	return shard;
}
