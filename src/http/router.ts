import { getPath } from "hono/utils/url";

/**
 * A literal ':' in a path, as routes spell it (`users:import`, Google's
 * custom-method style: https://google.aip.dev/136).
 */
export const COLON = "%3A";

/**
 * The request path as the router matches it: every ':' as `%3A`.
 * RegExpRouter reads a ':' anywhere in a route as the start of a parameter,
 * so a route with a literal colon is written with COLON; a parameter's value
 * comes back decoded from `c.req.param()` (Hono decodes values holding '%').
 *
 * Every Hono app that serves requests (the Worker's, and the dashboard's
 * in-process admin API) is made with `router: new RegExpRouter()` and this
 * `getPath`. RegExpRouter matches all routes with one regular expression;
 * Hono's default (SmartRouter) silently falls back to its trie router when a
 * route does not fit one, which cost about 4% of a conversion's CPU in the
 * profile (bench/README.md). Named explicitly, a route it cannot hold (a
 * parameter beside a literal at the same place for the same method, e.g.
 * `/campaigns/new` and `/campaigns/:campaignid`) fails every test that makes
 * a request instead of slowing every request in production.
 */
export function routedPath(request: Request): string {
	const path = getPath(request);
	return path.includes(":") ? path.replaceAll(":", COLON) : path;
}
