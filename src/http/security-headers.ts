import type { MiddlewareHandler } from "hono";

/**
 * Headers every response of the Worker carries, whatever route made it
 * (dashboard, share page, /docs, error pages):
 *
 * - `X-Content-Type-Options: nosniff` on every response, so a browser never
 *   runs a response as something its Content-Type does not say (a JSON
 *   answer or a CSV as HTML or script).
 * - `Referrer-Policy` on every HTML page, `no-referrer` unless the route set
 *   its own (the dashboard sends `same-origin`), so URLs carrying ids or
 *   signatures do not leak to other sites.
 */
export const DEFAULT_REFERRER_POLICY = "no-referrer";

export const securityHeaders: MiddlewareHandler = async (c, next) => {
	await next();
	const headers = c.res.headers;
	try {
		headers.set("X-Content-Type-Options", "nosniff");
		const html = /^text\/html\b/i.test(headers.get("content-type") ?? "");
		if (html && !headers.has("Referrer-Policy")) headers.set("Referrer-Policy", DEFAULT_REFERRER_POLICY);
	} catch {
		// A response with immutable headers (passed through as received) keeps them as they are.
	}
};
