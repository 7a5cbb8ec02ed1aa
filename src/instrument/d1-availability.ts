import { shardBinding } from "../domain/shard";
import { breakerOf } from "./d1-breaker";

/**
 * D1 busy or down (issue 33). One D1 database runs one query at a time; when
 * its queue is full it refuses with `overloaded`, and a reset or a lost
 * connection fails a query that may be retried. Those failures are the
 * platform's, not the caller's: the HTTP layer answers them as 503
 * `service_busy` with `Retry-After` (http/errors.ts), and idempotent reads are
 * retried once first (`retryingReads`).
 *
 * The texts are D1's own (Cloudflare D1 docs, "Error list" and "Retry
 * queries"): the JavaScript client throws `D1_ERROR: <message>`, or the
 * runtime's own error for a lost connection.
 */
const TRANSIENT = [
	/D1 DB is overloaded/i, // "Requests queued for too long." / "Too many requests queued."
	/overloaded/i,
	/Network connection lost/i,
	/storage operation exceeded timeout/i,
	/(caused|which caused) object to be reset/i,
	/D1 DB reset because its code was updated/i,
	/exceeded its (memory|CPU time) limit and was reset/i,
	/transient issue on remote node/i,
	/D1 is (temporarily )?unavailable/i,
	/D1_ERROR: .*timed? ?out/i,
];

/** True when `error` is D1 refusing or losing a query for a reason of its own, so the same query may succeed later. */
export function isD1Unavailable(error: unknown): boolean {
	const message = error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? "")}` : String(error);
	return TRANSIENT.some((pattern) => pattern.test(message));
}

/**
 * D1 busy or down, naming the database that failed (`DB`, the control
 * database, or `SHARD_<n>`, issue 50): the message is D1's own with the
 * binding after it, so `isD1Unavailable` still recognises it (also after an
 * RPC hop, which keeps only the message), and the 503's log line says which
 * shard a request needed. The answer itself never names a shard.
 */
export class D1UnavailableError extends Error {
	override name = "D1UnavailableError";
	constructor(
		readonly database: string,
		override readonly cause: unknown,
	) {
		super(`${cause instanceof Error ? cause.message : String(cause)} [${database}]`);
	}
}

/** `error` named after `database` when it is D1 busy or down (and not named yet); any other error as it is. */
export function namedD1Error(error: unknown, database: string): unknown {
	if (error instanceof D1UnavailableError || !isD1Unavailable(error)) return error;
	return new D1UnavailableError(database, error);
}

/** The database a D1-unavailable error names (`DB`, `SHARD_<n>`), or null. */
export function unavailableDatabase(error: unknown): string | null {
	if (error instanceof D1UnavailableError) return error.database;
	const message = error instanceof Error ? error.message : String(error);
	return isD1Unavailable(error) ? (/\[((?:DB|SHARD_\d+))\]\s*$/.exec(message)?.[1] ?? null) : null;
}

/** A statement that only reads: retrying it cannot write twice. */
export function isReadOnly(sql: string): boolean {
	const text = sql.trimStart().toUpperCase();
	return (text.startsWith("SELECT") || text.startsWith("WITH")) && !/\b(INSERT|UPDATE|DELETE|REPLACE)\b/.test(text);
}

/** How long the one retry of a read waits: long enough for a full queue to drain a little, short for a client. */
const RETRY_DELAY_MS = 40;

/**
 * Runs `run`, and once more after a short wait when it failed because D1 was
 * unavailable and `readOnly()` says the statements only read. Whether they
 * only read is asked only then: every D1 call on every path goes through here,
 * and upper-casing and matching each statement's text before each call cost
 * its share of a conversion for an answer needed only on a failure.
 */
async function onceMore<T>(run: () => Promise<T>, readOnly: () => boolean, database: string, breaker: Breaker | null): Promise<T> {
	try {
		return await guarded(run, database, breaker);
	} catch (error) {
		if (error instanceof BreakerOpen || !isD1Unavailable(error) || !readOnly()) throw namedD1Error(error, database);
		await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS + Math.random() * RETRY_DELAY_MS));
		try {
			return await guarded(run, database, breaker);
		} catch (again) {
			throw namedD1Error(again, database);
		}
	}
}

type Breaker = ReturnType<typeof breakerOf>;

/** A shard's round trip refused by this isolate's breaker (d1-breaker.ts): D1's own word for it, so it is answered as D1 busy. */
class BreakerOpen extends D1UnavailableError {
	constructor(database: string) {
		super(database, new Error("D1 DB is overloaded: this isolate's breaker for the shard is open, not asking it for a moment"));
	}
}

/** `run` through the shard's breaker: refused at once while it is open, and its outcome recorded. The control database has none. */
async function guarded<T>(run: () => Promise<T>, database: string, breaker: Breaker | null): Promise<T> {
	if (!breaker) return run();
	if (!breaker.admit(Date.now())) throw new BreakerOpen(database);
	try {
		const result = await run();
		breaker.settle(true, Date.now());
		return result;
	} catch (error) {
		// Any other error (a constraint, a syntax error) is the database answering: not a reason to stop asking it.
		breaker.settle(!isD1Unavailable(error), Date.now());
		throw error;
	}
}

const ROUND_TRIPS = new Set(["first", "run", "all", "raw"]);

/** A method of `target` called with `target` as `this` (the binding's classes keep private state). */
function own(target: object, prop: string | symbol): unknown {
	const value = Reflect.get(target, prop);
	return typeof value === "function" ? value.bind(target) : value;
}

/**
 * `db` with every read-only round trip (a statement, or a batch of only
 * reads) retried once when D1 is unavailable. Writes are never retried here:
 * a write that timed out may have committed, and each write path has its own
 * guard or idempotency key for the client's retry. What still fails for D1's
 * own reasons is thrown as a D1UnavailableError naming `database` (the
 * binding: `DB` or `SHARD_<n>`).
 */
export function retryingReads(
	db: D1Database,
	database = "DB",
	/** A shard's breaker (d1-breaker.ts), shared by the binding's sessions; the control database has none. */
	breaker: Breaker | null = database === "DB" ? null : breakerOf(db),
): D1Database {
	const sqlOf = new WeakMap<object, string>();
	const real = new WeakMap<object, D1PreparedStatement>();
	const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
				if (typeof prop === "string" && ROUND_TRIPS.has(prop)) {
					const method = own(target, prop) as (...args: unknown[]) => Promise<unknown>;
					return (...args: unknown[]) =>
						onceMore(
							() => method(...args),
							() => isReadOnly(sql),
							database,
							breaker,
						);
				}
				return own(target, prop);
			},
		});
		sqlOf.set(proxy, sql);
		real.set(proxy, statement);
		return proxy;
	};
	return new Proxy(db, {
		get(target, prop) {
			if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) => {
					const texts = statements.map((s) => sqlOf.get(s) ?? "INSERT");
					return onceMore(
						() => target.batch(statements.map((s) => real.get(s) ?? s)),
						() => texts.every(isReadOnly),
						database,
						breaker,
					);
				};
			}
			if (prop === "withSession") {
				return (constraint?: string) => retryingReads(target.withSession(constraint) as unknown as D1Database, database, breaker);
			}
			return own(target, prop);
		},
	});
}

function isD1(value: unknown): value is D1Database {
	return typeof value === "object" && value !== null && "prepare" in value && "batch" in value;
}

/**
 * The env's shard bindings by name (`SHARD_0`, `SHARD_1`, ... while they are
 * bound), for the wrappers that every D1 binding gets (the read retry here, the
 * bench's counting). Not a check of SHARD_COUNT: routing checks that
 * (db/shards.ts `shardPool`), and a wrapper must not fail a request that needs
 * no shard.
 */
export function boundShardNames(env: object): string[] {
	const names: string[] = [];
	for (let i = 0; ; i++) {
		if (!isD1(Reflect.get(env, shardBinding(i)))) return names;
		names.push(shardBinding(i));
	}
}

/** Every D1 binding of `env` (DB and each bound shard) wrapped by `wrap`, keyed by binding name, for `withBindings`. */
export function everyD1Wrapped(env: Env, wrap: (db: D1Database, name: string) => D1Database): Record<string, D1Database> {
	const out: Record<string, D1Database> = { DB: wrap(env.DB, "DB") };
	for (const name of boundShardNames(env)) {
		const binding: unknown = Reflect.get(env, name);
		if (isD1(binding)) out[name] = wrap(binding, name);
	}
	return out;
}
