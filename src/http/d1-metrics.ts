import type { MiddlewareHandler } from "hono";
import {
	countingD1,
	countingLedgers,
	countRequest,
	instrumentEnv,
	metricsEnabled,
	newMetrics,
	withBindings,
} from "../instrument/d1-metrics";

/**
 * The request side of the bench's instrumentation (src/instrument/d1-metrics.ts
 * explains the counting and the flag): per-request counts in response
 * headers, and the route that answers the isolate's running totals.
 */

/** Where the Worker answers d1Totals() (only with the flag set). */
export const TOTALS_PATH = "/__metrics/d1";

/** Hono middleware: when the flag is set, swaps in counting bindings for this request and reports the counts in headers. */
export const d1Metrics: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
	if (!metricsEnabled(c.env)) return next();
	if (c.req.path === TOTALS_PATH) return next();
	countRequest();
	const m = newMetrics();
	const counted = instrumentEnv(c.env, "worker");
	c.env = withBindings(counted, { DB: countingD1(counted.DB, m), USER_LEDGER: countingLedgers(counted.USER_LEDGER, m) });
	await next();
	c.header("x-d1-roundtrips", String(m.d1RoundTrips));
	c.header("x-d1-statements", String(m.d1Statements));
	c.header("x-d1-rows-written", String(m.d1RowsWritten));
	c.header("x-d1-ms", String(m.d1Ms));
	c.header("x-do-calls", String(m.doCalls));
	c.header("x-do-ms", String(m.doMs));
};
