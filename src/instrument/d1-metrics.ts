import { everyD1Wrapped } from "./d1-availability";
import {
	countingLimiter,
	countingObjects,
	countingOutboxQueue,
	countingProjectionQueue,
	type PlatformPart,
	platformParts,
} from "./platform-parts";

/**
 * Opt-in instrumentation for the bench (bench/README.md). With the var
 * `D1_QUERY_COUNT=1` (`wrangler dev --var D1_QUERY_COUNT:1`), a request that
 * sends `x-count-d1: 1` (src/http/d1-metrics.ts) gets its own counting
 * wrappers of `env.DB` and `env.USER_LEDGER`, and the response carries:
 *
 * - `x-d1-roundtrips`: D1 calls awaited (a `batch()` is ONE round trip),
 * - `x-d1-statements`: SQL statements in them (a batch counts each of its statements),
 * - `x-d1-rows-written`: D1's `meta.rows_written` of those calls, summed,
 * - `x-d1-ms`: the summed wall time of those calls (overlapping calls both count),
 * - `x-do-calls` / `x-do-ms`: the same for RPC calls to UserLedger objects,
 * - `x-d1-roundtrips-by-database`: the round trips per database that had any
 *   (`DB=2, SHARD_3=1`): the control database and each shard (issue 50).
 *
 * Only the request's own path until its response is ready is counted in
 * those headers. Besides, every use of `env.DB` in the isolate is counted
 * into running totals per source (`instrumentEnv`): the Worker's requests
 * (their `waitUntil` work included), the UserLedger objects (their outbox
 * flushes), the queue consumer (and its sweep) and scheduled jobs. `GET
 * /__metrics/d1` answers those totals, so the bench can divide what a run
 * caused, background included, by its requests ("all-in"), in all and per
database (`byDatabase`: `DB` and each `SHARD_<n>`). Off by default:
 * then the middleware only reads the flag and `instrumentEnv` returns the
 * env it is given.
 *
 * This module is the counting itself, free of Hono, so the ledger, the queue
 * consumer and the scheduled handler can use it; the request middleware and
 * the totals route are in src/http/d1-metrics.ts.
 */
export interface RequestMetrics {
	d1RoundTrips: number;
	d1Statements: number;
	/** D1's `meta.rows_written` of those calls, summed (index entries included, as D1 bills them). */
	d1RowsWritten: number;
	d1Ms: number;
	doCalls: number;
	doMs: number;
}

type Flagged = Env & { D1_QUERY_COUNT?: string };

/** True when the instrumentation flag is set. */
export const metricsEnabled = (env: Env) => ["1", "true"].includes(String((env as Flagged).D1_QUERY_COUNT ?? "").toLowerCase());

async function timed<T>(run: () => Promise<T>, done: (ms: number) => void): Promise<T> {
	const started = Date.now();
	try {
		return await run();
	} finally {
		done(Date.now() - started);
	}
}

/** A method of `target` called with `target` as `this` (the bindings' classes keep private state). */
function own(target: object, prop: string | symbol): unknown {
	const value = Reflect.get(target, prop);
	return typeof value === "function" ? value.bind(target) : value;
}

const ROUND_TRIPS = new Set(["first", "run", "all", "raw"]);

/** Where D1 round trips come from, for the isolate's running totals. */
export type D1Source = "worker" | "ledger" | "consumer" | "projection" | "scheduled" | "clicks";

/** Counters at zero, for one request. */
export const newMetrics = (): RequestMetrics => ({ d1RoundTrips: 0, d1Statements: 0, d1RowsWritten: 0, d1Ms: 0, doCalls: 0, doMs: 0 });
const totals: Record<D1Source, RequestMetrics> = {
	worker: newMetrics(),
	ledger: newMetrics(),
	consumer: newMetrics(),
	projection: newMetrics(),
	scheduled: newMetrics(),
	clicks: newMetrics(),
};
/** Rows the UserLedger objects wrote to their own SQLite (cursor `rowsWritten`, summed): the ledgers' side of a write's cost. */
let ledgerRowsWritten = 0;

/**
 * Rows written and statements run per source and statement (its SQL, spaces
 * collapsed, cut at SQL_KEY_LENGTH): where a write's rows go, so a cut can be
 * aimed (bench/README.md, "Rows by statement"). Bounded by the service's own
 * SQL texts, not by the data.
 */
const rowsBySql = new Map<string, { statements: number; rows: number }>();
const SQL_KEY_LENGTH = 120;

/**
 * The breakdown's entry of each SQL text already seen, per source. With the
 * flag on (the whole bench run, the load included), every D1 and ledger
 * statement is counted here; collapsing the spaces of its text with a regex
 * each time (a new ledger's schema script is 150 lines) was 3.5% of a
 * first-reward conversion's profile. A text is keyed as it is: the service's
 * texts are constants or built from a few shapes, and past
 * SQL_TEXTS_PER_SOURCE texts (lists of `?` of every length) the key is
 * computed each time again, so memory stays bounded whatever the data.
 */
const entryOfText = new Map<D1Source | "ledgers", Map<string, { statements: number; rows: number }>>();
const SQL_TEXTS_PER_SOURCE = 1000;

/** The breakdown's key of a statement: its source and SQL, spaces collapsed, cut at SQL_KEY_LENGTH. */
export function sqlKey(source: D1Source | "ledgers", sql: string): string {
	return `${source}: ${sql.replace(/\s+/g, " ").trim().slice(0, SQL_KEY_LENGTH)}`;
}

/** Adds one statement's rows written to the breakdown by statement. */
export function countRowsBySql(source: D1Source | "ledgers", sql: string, rows: number): void {
	let texts = entryOfText.get(source);
	if (!texts) {
		texts = new Map();
		entryOfText.set(source, texts);
	}
	let entry = texts.get(sql);
	if (!entry) {
		const key = sqlKey(source, sql);
		entry = rowsBySql.get(key) ?? { statements: 0, rows: 0 };
		rowsBySql.set(key, entry);
		if (texts.size < SQL_TEXTS_PER_SOURCE) texts.set(sql, entry);
	}
	entry.statements++;
	entry.rows += rows;
}

/** Counts rows a ledger wrote to its own storage (the ledger's counting `sql`, countingSql). */
export function countLedgerRows(rows: number, sql?: string): void {
	ledgerRowsWritten += rows;
	if (sql !== undefined) countRowsBySql("ledgers", sql, rows);
}

/**
 * The lag of D1's projection behind the ledgers: from a ledger's send to the
 * projection queue until the consumer's batch committed, per message, in
 * buckets (upper bounds in ms; the last is everything above), so the bench
 * can subtract two readings.
 */
export const LAG_BUCKETS_MS = [100, 250, 500, 1000, 2000, 5000, 10_000, Number.POSITIVE_INFINITY];
const lag = { count: 0, sumMs: 0, maxMs: 0, buckets: LAG_BUCKETS_MS.map(() => 0) };

/** Counts one projection message's lag (outbox/projection-consumer.ts); only with the flag set is it read. */
export function recordProjectionLag(ms: number): void {
	lag.count++;
	lag.sumMs += ms;
	lag.maxMs = Math.max(lag.maxMs, ms);
	const i = LAG_BUCKETS_MS.findIndex((bound) => ms <= bound);
	lag.buckets[i] = (lag.buckets[i] ?? 0) + 1;
}
/** Requests the Worker answered (the totals route excepted): what the bench divides the totals by. */
let requests = 0;

/** Counts one request the Worker answers (the middleware calls it), for d1Totals. */
export function countRequest(): void {
	requests++;
}

/**
 * The env with its D1 binding counted into the isolate's totals for `source`
 * when the flag is set; `env` itself otherwise. Every entry point applies it
 * (the Worker's middleware, UserLedger's constructor, the queue consumer, the
 * scheduled handler).
 */
export function instrumentEnv(env: Env, source: D1Source): Env {
	if (!metricsEnabled(env)) return env;
	// The isolate's env is one object for every request: its counting twin is made once per source, not
	// copied per request (spreading the bindings cost 4% of a conversion's CPU with the flag on).
	let bySource = instrumented.get(env);
	if (!bySource) {
		bySource = new Map();
		instrumented.set(env, bySource);
	}
	let counted = bySource.get(source);
	if (!counted) {
		// Its ledger calls and projection messages too: the platform parts of bench/floors.mjs (platform-parts.ts).
		// Every D1 binding, the control database and each shard (issue 50), into the source's totals and its own.
		const bySql = (sql: string, rows: number) => countRowsBySql(source, sql, rows);
		counted = withBindings(env, {
			...everyD1Wrapped(env, (db, name) => countingD1(countingD1(db, databaseTotals(name)), totals[source], bySql)),
			USER_LEDGER: countingLedgers(env.USER_LEDGER, totals[source]),
			EVENT_GATE: countingObjects(env.EVENT_GATE, "gateCalls"),
			PROJECTION: countingProjectionQueue(env.PROJECTION),
			OUTBOX: countingOutboxQueue(env.OUTBOX),
			...countingLimiters(env),
		});
		bySource.set(source, counted);
	}
	return counted;
}

const instrumented = new WeakMap<Env, Map<D1Source, Env>>();

/** The isolate's running totals per D1 database (`DB`, `SHARD_<n>`), all sources together: how the load spreads over the shards. */
const byDatabase = new Map<string, RequestMetrics>();

/** The running totals of one database, made on its first use. */
function databaseTotals(name: string): RequestMetrics {
	let m = byDatabase.get(name);
	if (!m) {
		m = newMetrics();
		byDatabase.set(name, m);
	}
	return m;
}

/** The Rate Limiting bindings of wrangler.toml, each call a platform part (bench/floors.mjs prices one). */
const LIMITERS = ["FAILED_AUTH_LIMITER", "FAILED_AUTH_IP_LIMITER", "APP_RATE_LIMITER", "ADMIN_AUTH_LIMITER", "CLICK_LIMITER"] as const;

/** The env's rate limiters, counting; one that is missing (a test's env) stays missing. */
function countingLimiters(env: Env): Partial<Env> {
	const out: Partial<Env> = {};
	for (const name of LIMITERS) if (env[name]) out[name] = countingLimiter(env[name]);
	return out;
}

/** `env` with some bindings replaced: an object that inherits the rest, so nothing is copied. */
export function withBindings(env: Env, replaced: Partial<Env>): Env {
	// Defined, not assigned: an env whose bindings are accessors (the test runner's `env`) would take an
	// assignment through its setter and change the original for everyone.
	const own: PropertyDescriptorMap = {};
	for (const [name, value] of Object.entries(replaced)) own[name] = { value, enumerable: true, configurable: true, writable: true };
	return Object.create(env, own) as Env;
}

/** The isolate's running D1 totals per source (with the ledger calls made from it), and their sum. */
type Totals = { roundtrips: number; statements: number; rowswritten: number; docalls: number };
export function d1Totals(): {
	requests: number;
	total: Totals;
	ledgerStorage: { rowswritten: number };
	projectionLag: { count: number; sumMs: number; maxMs: number; bucketsMs: number[]; buckets: number[] };
	parts: Record<PlatformPart, number>;
	rowsBySql: Record<string, { statements: number; rows: number }>;
	/** The same totals per database (`DB`, `SHARD_<n>`), all sources together; their sum is `total`. */
	byDatabase: Record<string, Totals>;
} & Record<D1Source, Totals> {
	const view = (m: RequestMetrics) => ({
		roundtrips: m.d1RoundTrips,
		statements: m.d1Statements,
		rowswritten: m.d1RowsWritten,
		docalls: m.doCalls,
	});
	const sources = Object.keys(totals) as D1Source[];
	return {
		requests,
		worker: view(totals.worker),
		ledger: view(totals.ledger),
		consumer: view(totals.consumer),
		projection: view(totals.projection),
		scheduled: view(totals.scheduled),
		clicks: view(totals.clicks),
		total: {
			roundtrips: sources.reduce((n, s) => n + totals[s].d1RoundTrips, 0),
			statements: sources.reduce((n, s) => n + totals[s].d1Statements, 0),
			rowswritten: sources.reduce((n, s) => n + totals[s].d1RowsWritten, 0),
			docalls: sources.reduce((n, s) => n + totals[s].doCalls, 0),
		},
		ledgerStorage: { rowswritten: ledgerRowsWritten },
		// JSON has no Infinity: the last bound is written as -1 (everything above the one before).
		projectionLag: {
			count: lag.count,
			sumMs: lag.sumMs,
			maxMs: lag.maxMs,
			bucketsMs: LAG_BUCKETS_MS.map((b) => (Number.isFinite(b) ? b : -1)),
			buckets: [...lag.buckets],
		},
		parts: platformParts(),
		rowsBySql: Object.fromEntries(rowsBySql),
		byDatabase: Object.fromEntries(
			[...byDatabase].sort(([a], [b]) => databaseOrder(a) - databaseOrder(b)).map(([name, m]) => [name, view(m)]),
		),
	};
}

/** DB first, then the shards by number. */
const databaseOrder = (name: string) => (name === "DB" ? -1 : Number(/\d+$/.exec(name)?.[0] ?? 1e9));

/** D1's rows written of one statement's result. */
function rowsOfOne(r: unknown): number {
	const meta = typeof r === "object" && r !== null ? Reflect.get(r, "meta") : undefined;
	const rows = typeof meta === "object" && meta !== null ? Reflect.get(meta, "rows_written") : undefined;
	return typeof rows === "number" ? rows : 0;
}

/** D1's rows written of a call's answer (a statement's result, or a batch's list of them). */
function rowsWrittenOf(result: unknown): number {
	return Array.isArray(result) ? result.reduce((n: number, r) => n + rowsOfOne(r), 0) : rowsOfOne(result);
}

/**
 * Wraps `db` so that every round trip made through it is counted into `m`;
 * `bySql`, when given, is told each statement's SQL and rows written.
 */
export function countingD1(db: D1Database, m: RequestMetrics, bySql?: (sql: string, rows: number) => void): D1Database {
	const real = new WeakMap<object, D1PreparedStatement>();
	const sqlOf = new WeakMap<object, string>();
	const count = (statements: number) => (ms: number) => {
		m.d1RoundTrips++;
		m.d1Statements += statements;
		m.d1Ms += ms;
	};
	const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
				// `first` answers no `meta`: counted, it runs as `all` (the same one round trip) and takes the first row.
				if (prop === "first") {
					const all = own(target, "all") as () => Promise<D1Result<Record<string, unknown>>>;
					return async (column?: string) => {
						const result = await rowsCounted(timed(all, count(1)), [sql]);
						const row = result.results[0] ?? null;
						return column === undefined ? row : (row?.[column] ?? null);
					};
				}
				if (typeof prop === "string" && ROUND_TRIPS.has(prop)) {
					const method = own(target, prop) as (...args: unknown[]) => Promise<unknown>;
					return (...args: unknown[]) =>
						rowsCounted(
							timed(() => method(...args), count(1)),
							[sql],
						);
				}
				return own(target, prop);
			},
		});
		real.set(proxy, statement);
		sqlOf.set(proxy, sql);
		return proxy;
	};
	const rowsCounted = async <T>(call: Promise<T>, sqls: (string | undefined)[]): Promise<T> => {
		const result = await call;
		m.d1RowsWritten += rowsWrittenOf(result);
		if (bySql) {
			const results: unknown[] = Array.isArray(result) ? result : [result];
			results.forEach((r, i) => {
				bySql(sqls[i] ?? "(unknown)", rowsOfOne(r));
			});
		}
		return result;
	};
	return new Proxy(db, {
		get(target, prop) {
			if (prop === "prepare") return (query: string) => wrap(target.prepare(query), query);
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) =>
					rowsCounted(
						timed(() => target.batch(statements.map((s) => real.get(s) ?? s)), count(statements.length)),
						statements.map((s) => sqlOf.get(s)),
					);
			}
			if (prop === "exec") return (query: string) => timed(() => target.exec(query), count(1));
			// A session has prepare and batch as the database has: count through it too.
			if (prop === "withSession") {
				return (constraint?: string) => countingD1(target.withSession(constraint) as unknown as D1Database, m, bySql);
			}
			return own(target, prop);
		},
	});
}

/** Wraps the ledger namespace so that every RPC call on a stub it hands out is counted into `m`. */
export function countingLedgers<T extends DurableObjectNamespace<any>>(namespace: T, m: RequestMetrics): T {
	const done = (ms: number) => {
		m.doCalls++;
		m.doMs += ms;
	};
	const wrapStub = (stub: object) =>
		new Proxy(stub, {
			get(target, prop) {
				const value = Reflect.get(target, prop);
				if (typeof value !== "function" || typeof prop !== "string" || prop === "then") return value;
				return (...args: unknown[]) => timed(async () => Reflect.apply(value, target, args), done);
			},
		});
	return new Proxy(namespace, {
		get(target, prop) {
			if (prop === "get" || prop === "getByName") {
				const method = own(target, prop) as (...args: unknown[]) => object;
				return (...args: unknown[]) => wrapStub(method(...args));
			}
			return own(target, prop);
		},
	});
}
