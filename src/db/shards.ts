import { SHARD_HASH, shardBinding, shardIndex } from "../domain/shard";

/**
 * The pool of D1 shards (issue 50, docs/scaling.md "Past one database"):
 * `SHARD_0` ... `SHARD_<n - 1>`, n = the environment's `SHARD_COUNT` var (4
 * locally and in every test, 32 deployed), bound in wrangler.toml beside the
 * control database `DB`. A binding is fixed at deploy time, so the pool is
 * too; `npm run migrate` records n and the hash in the control database's
 * `shard_directory` and refuses a deploy whose count differs.
 *
 * Routing goes through `shardPool(env)` (or `shardFor`, `shardNumberFor`,
 * which use it): once per isolate it reads the shard directory and compares
 * it with the Worker's own SHARD_COUNT, bindings and hash, and refuses to
 * route on any difference. `npm run deploy` runs the same comparison before
 * it deploys (scripts/migrate.mjs); this one stops a bare `wrangler deploy`
 * past it, or a directory edited by hand, from writing a key to a shard
 * that is not its own.
 *
 * Phase 2a routes nothing on a request path yet: the tables move here in
 * phase 2b (email, account id and referral code to user; the per-user rows of
 * the admin views), each found by `shardFor` with the key its lookup has.
 */

/** What the pool needs of an environment: the count and the control database; the shard bindings are read by name. */
export interface ShardedEnv {
	SHARD_COUNT: string;
	DB: D1Database;
}

/** A wrangler.toml or shard directory that disagrees with the Worker: every route would be wrong, so nothing routes. */
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
 * Every shard bound in the environment, in order, checked once per env
 * object against SHARD_COUNT: a positive integer, each of SHARD_0 ...
 * SHARD_<count - 1> a D1 binding, and no SHARD_<count> (a count lower than
 * the bindings would route keys away from their rows as surely as a missing
 * binding). Not checked against the shard directory: for the migrations'
 * own setup (test/apply-migrations.ts); a request routes through `shardPool`.
 */
export function everyShard(env: Pick<ShardedEnv, "SHARD_COUNT">): readonly D1Database[] {
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

/** The shard directory as `npm run migrate` recorded it in the control database. */
export interface ShardDirectory {
	shard_count: number;
	hash: string;
}

/** The control database's shard directory; null when no row was written (a database migrated without `npm run migrate`). */
export async function readShardDirectory(db: D1Database): Promise<ShardDirectory | null> {
	const row = await db.prepare("SELECT shard_count, hash FROM shard_directory WHERE id = 1").first<ShardDirectory>();
	return row ?? null;
}

/** Why the directory refuses a Worker with `count` shards bound under SHARD_HASH (a message), or null when they agree. Pure. */
export function directoryMismatch(directory: ShardDirectory | null, count: number, hash = SHARD_HASH): string | null {
	if (!directory)
		return "the control database has no shard directory: run `npm run migrate` for this environment (it records the shard count and hash)";
	if (directory.shard_count !== count || directory.hash !== hash)
		return `the shard directory records ${directory.shard_count} shards by ${directory.hash}, but this Worker has ${count} by ${hash} (SHARD_COUNT and its SHARD_<n> bindings): deploy with \`npm run deploy\`, whose migrate step refuses such a configuration, or restore the wrangler.toml the directory was made with`;
	return null;
}

/**
 * The isolate's reading of the shard directory. A reading that agrees is kept
 * for the isolate's life (the directory never changes for a deployed pool); one
 * that refuses is read again after REFUSAL_RECHECK_MS, so a directory repaired
 * by `npm run migrate` is seen without a restart. A failed read is not kept.
 */
let directory: { read: Promise<ShardDirectory | null>; at: number } | null = null;
const REFUSAL_RECHECK_MS = 30_000;
/** The refusals already logged: each distinct one once per isolate. */
const logged = new Set<string>();

/** Forgets the isolate's reading of the shard directory (tests that change it). */
export function forgetShardDirectory(): void {
	directory = null;
	logged.clear();
}

async function checkedDirectory(env: ShardedEnv, count: number): Promise<void> {
	if (!directory || (directory.at > 0 && Date.now() - directory.at > REFUSAL_RECHECK_MS)) {
		const read = readShardDirectory(env.DB);
		directory = { read, at: 0 };
		read.catch(() => {
			if (directory?.read === read) directory = null;
		});
	}
	const current = directory;
	const refusal = directoryMismatch(await current.read, count);
	if (!refusal) return;
	if (current.at === 0) current.at = Date.now();
	if (!logged.has(refusal)) {
		logged.add(refusal);
		console.error(JSON.stringify({ msg: "shard routing refused", error: refusal }));
	}
	throw new ShardConfigError(`shard routing refused: ${refusal}`);
}

/** The pool of a Worker whose bindings, SHARD_COUNT and shard directory agree: what routing and fan-out use. */
export interface ShardPool {
	/** The shards in order: `shards[n]` is SHARD_<n> of this env (wrapped as the env's bindings are). */
	readonly shards: readonly D1Database[];
	readonly count: number;
	/** The shard number (0 to count - 1) of (appid, key): for grouping a batch's writes by shard, or naming a busy shard. */
	numberFor(appid: string, key: string): number;
	/** The D1 shard that holds (appid, key)'s rows, by SHARD_HASH of the pair. */
	for(appid: string, key: string): D1Database;
}

const verifiedPools = new WeakMap<object, ShardPool>();

/** The env's shard pool, after the isolate's check of the shard directory; throws ShardConfigError (logged) on a mismatch. */
export async function shardPool(env: ShardedEnv): Promise<ShardPool> {
	const known = verifiedPools.get(env);
	const shards = known?.shards ?? everyShard(env);
	await checkedDirectory(env, shards.length);
	if (known) return known;
	const numberFor = (appid: string, key: string) => shardIndex(shards.length, appid, key);
	const pool: ShardPool = {
		shards,
		count: shards.length,
		numberFor,
		for(appid, key) {
			const shard = shards[numberFor(appid, key)];
			if (!shard) throw new ShardConfigError(`no shard for ${SHARD_HASH} of (${appid}, ${key})`);
			return shard;
		},
	};
	verifiedPools.set(env, pool);
	return pool;
}

/** The shard number (0 to SHARD_COUNT - 1) of (appid, key), through the checked pool. */
export async function shardNumberFor(env: ShardedEnv, appid: string, key: string): Promise<number> {
	return (await shardPool(env)).numberFor(appid, key);
}

/** The D1 shard that holds (appid, key)'s rows, through the checked pool. */
export async function shardFor(env: ShardedEnv, appid: string, key: string): Promise<D1Database> {
	return (await shardPool(env)).for(appid, key);
}
