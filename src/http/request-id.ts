import type { MiddlewareHandler } from "hono";

/**
 * Request ids (issue 51): every response carries a `Request-Id` header, and
 * every error answer (the JSON envelope of the public operations, the admin
 * API and the Stripe endpoint) also carries it as `requestid`, with `docs`,
 * the link to its code's entry in docs/api.md. The same id is in the log line
 * of that answer, so a caller who quotes it lets an operator find the request
 * (`wrangler tail`, Workers Logs). The dashboard's error pages show it too
 * (dashboard/routes.tsx). Added once here, after the handler answered, so no
 * error path can leave it out; the fields are additions to the envelope
 * (`success`, `message`, `errorcode` keep their shape, docs/api.md).
 */

export const REQUEST_ID_HEADER = "Request-Id";

const ids = new WeakMap<Request, string>();

/** `req_` and 32 hex digits: random, so it says nothing about the request. */
export function newRequestId(): string {
	return `req_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** The id of a request the middleware saw (else a new one, e.g. a request made in process). */
export function requestIdOf(request: Request): string {
	let id = ids.get(request);
	if (!id) {
		id = newRequestId();
		ids.set(request, id);
	}
	return id;
}

/**
 * Where a code is documented: its heading in docs/api.md, served by the
 * Worker's static assets beside the reference at /docs (scripts/static-assets.mjs),
 * so the link works on every deployment and matches the code it runs.
 */
export function errorDocsUrl(origin: string, errorcode: string): string {
	return `${origin}/docs/api.md#${errorcode}`;
}

/** The one log line of an error answer; warn for 4xx (the caller's), error for 5xx (ours). */
export function logErrorAnswer(request: Request, status: number, errorcode: string, requestid: string, replayof?: string): void {
	const line = JSON.stringify({
		msg: "error answer",
		requestid,
		// An idempotent replay: the request whose answer it repeats.
		replayof,
		status,
		errorcode,
		method: request.method,
		path: new URL(request.url).pathname,
		// Cloudflare's own id of the request, to find it in the platform's logs too (absent under wrangler dev).
		ray: request.headers.get("cf-ray") ?? undefined,
	});
	if (status >= 500) console.error(line);
	else console.warn(line);
}

export const requestIds: MiddlewareHandler = async (c, next) => {
	const id = requestIdOf(c.req.raw);
	await next();
	const res = c.res;
	if (res.status >= 400 && res.headers.get("content-type")?.startsWith("application/json")) {
		// Only error answers are read again (a few hundred bytes); a success passes untouched.
		const body: unknown = await res
			.clone()
			.json()
			.catch(() => null);
		if (isErrorEnvelope(body)) {
			// An idempotent replay's body is the first answer's, its requestid included (idempotency-key.ts):
			// kept byte for byte; this request's own id is in the header and in the log line, with the first's.
			const first = typeof body.requestid === "string" ? body.requestid : undefined;
			logErrorAnswer(c.req.raw, res.status, body.errorcode, id, first);
			if (!first) {
				const answer = { ...body, requestid: id, docs: errorDocsUrl(new URL(c.req.url).origin, body.errorcode) };
				c.res = new Response(JSON.stringify(answer), { status: res.status, headers: res.headers });
				c.res.headers.delete("content-length");
			}
		}
	}
	try {
		c.res.headers.set(REQUEST_ID_HEADER, id);
	} catch {
		// A response with immutable headers (passed through as received) keeps them as they are.
	}
};

function isErrorEnvelope(body: unknown): body is { success: false; errorcode: string; requestid?: unknown } {
	return (
		typeof body === "object" &&
		body !== null &&
		"success" in body &&
		body.success === false &&
		"errorcode" in body &&
		typeof body.errorcode === "string"
	);
}
