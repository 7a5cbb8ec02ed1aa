import type { MiddlewareHandler } from "hono";

/**
 * Opt-in instrumentation for the bench (bench/README.md). With the var
 * `D1_QUERY_COUNT=1` (`wrangler dev --var D1_QUERY_COUNT:1`), every request
 * gets its own counting wrappers of `env.DB` and `env.USER_LEDGER`, and the
 * response carries:
 *
 * - `x-d1-roundtrips`: D1 calls awaited (a `batch()` is ONE round trip),
 * - `x-d1-statements`: SQL statements in them (a batch counts each of its statements),
 * - `x-d1-ms`: the summed wall time of those calls (overlapping calls both count),
 * - `x-do-calls` / `x-do-ms`: the same for RPC calls to UserLedger objects.
 *
 * Only the request's own path until its response is ready is counted: work
 * handed to `waitUntil` that runs later (the enqueue of outbox events), the
 * queue consumer, and the D1 writes the ledger objects make themselves (their
 * outbox flush of the reward projection) use the unwrapped bindings. Off by
 * default: then the middleware only reads the flag.
 */
export interface RequestMetrics {
	d1RoundTrips: number;
	d1Statements: number;
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

/** Wraps `db` so that every round trip made through it is counted into `m`. */
export function countingD1(db: D1Database, m: RequestMetrics): D1Database {
	const real = new WeakMap<object, D1PreparedStatement>();
	const count = (statements: number) => (ms: number) => {
		m.d1RoundTrips++;
		m.d1Statements += statements;
		m.d1Ms += ms;
	};
	const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
				if (typeof prop === "string" && ROUND_TRIPS.has(prop)) {
					const method = own(target, prop) as (...args: unknown[]) => Promise<unknown>;
					return (...args: unknown[]) => timed(() => method(...args), count(1));
				}
				return own(target, prop);
			},
		});
		real.set(proxy, statement);
		return proxy;
	};
	return new Proxy(db, {
		get(target, prop) {
			if (prop === "prepare") return (query: string) => wrap(target.prepare(query));
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) =>
					timed(() => target.batch(statements.map((s) => real.get(s) ?? s)), count(statements.length));
			}
			if (prop === "exec") return (query: string) => timed(() => target.exec(query), count(1));
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

/** Hono middleware: when the flag is set, swaps in counting bindings for this request and reports the counts in headers. */
export const d1Metrics: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
	if (!metricsEnabled(c.env)) return next();
	const m: RequestMetrics = { d1RoundTrips: 0, d1Statements: 0, d1Ms: 0, doCalls: 0, doMs: 0 };
	c.env = { ...c.env, DB: countingD1(c.env.DB, m), USER_LEDGER: countingLedgers(c.env.USER_LEDGER, m) };
	await next();
	c.header("x-d1-roundtrips", String(m.d1RoundTrips));
	c.header("x-d1-statements", String(m.d1Statements));
	c.header("x-d1-ms", String(m.d1Ms));
	c.header("x-do-calls", String(m.doCalls));
	c.header("x-do-ms", String(m.doMs));
};
