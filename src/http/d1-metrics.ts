import type { MiddlewareHandler } from "hono";
import { everyD1Wrapped } from "../instrument/d1-availability";
import {
	countingD1,
	countingLedgers,
	countRequest,
	instrumentEnv,
	metricsEnabled,
	newMetrics,
	type RequestMetrics,
	withBindings,
} from "../instrument/d1-metrics";

/**
 * The request side of the bench's instrumentation (src/instrument/d1-metrics.ts
 * explains the counting and the flag): per-request counts in response
 * headers, and the route that answers the isolate's running totals.
 */

/** Where the Worker answers d1Totals() (only with the flag set). */
export const TOTALS_PATH = "/__metrics/d1";

/**
 * The request header that asks for this request's own counts (the bench's sequential samples send it). Requests
 * without it, such as the bench's load, are counted into the isolate's totals only: no wrappers are made for them,
 * so the CPU the bench measures under load is the service's, not the counting's.
 */
export const COUNT_HEADER = "x-count-d1";

/**
 * Hono middleware: when the flag is set, counts the request and its D1 use into the isolate's totals and, when
 * the request asks (COUNT_HEADER), swaps in counting bindings for it alone and reports its counts in headers.
 */
export const d1Metrics: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
	if (!metricsEnabled(c.env)) return next();
	if (c.req.path === TOTALS_PATH) return next();
	countRequest();
	const counted = instrumentEnv(c.env, "worker");
	if (c.req.header(COUNT_HEADER) !== "1") {
		c.env = counted;
		return next();
	}
	const m = newMetrics();
	// Each D1 binding (DB and every shard) counted into the request's total and its own line.
	const perDatabase = new Map<string, RequestMetrics>();
	const own = (name: string) => {
		const mine = perDatabase.get(name) ?? newMetrics();
		perDatabase.set(name, mine);
		return mine;
	};
	c.env = withBindings(counted, {
		...everyD1Wrapped(counted, (db, name) => countingD1(countingD1(db, own(name)), m)),
		USER_LEDGER: countingLedgers(counted.USER_LEDGER, m),
	});
	await next();
	const used = [...perDatabase].filter(([, mine]) => mine.d1RoundTrips > 0);
	c.header("x-d1-roundtrips-by-database", used.map(([name, mine]) => `${name}=${mine.d1RoundTrips}`).join(", "));
	c.header("x-d1-roundtrips", String(m.d1RoundTrips));
	c.header("x-d1-statements", String(m.d1Statements));
	c.header("x-d1-rows-written", String(m.d1RowsWritten));
	c.header("x-d1-ms", String(m.d1Ms));
	c.header("x-do-calls", String(m.doCalls));
	c.header("x-do-ms", String(m.doMs));
};
