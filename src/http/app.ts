import { Hono } from "hono";
import { RegExpRouter } from "hono/router/reg-exp-router";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { adminRoutes } from "../admin/routes";
import { dashboardRoutes } from "../dashboard/routes";
import { publicOrigin } from "../domain/public-origin";
import { unavailableDatabase } from "../instrument/d1-availability";
import { d1Totals, metricsEnabled } from "../instrument/d1-metrics";
import { stripeWebhookRoutes } from "../integrations/stripe/webhook";
import { openApiRoutes } from "../openapi/routes";
import { operations } from "../operations";
import { shareLinkRoutes } from "../operations/share-link";
import { logoFileRoutes } from "../sharepage/logos";
import { sharePageRoutes } from "../sharepage/routes";
import { authenticate } from "./auth";
import { d1Metrics, TOTALS_PATH } from "./d1-metrics";
import { devMailRoutes } from "./dev-mail";
import { ApiError, badRequest, errorBody } from "./errors";
import { describeZodError } from "./fields";
import { homeRoutes } from "./home";
import { idempotencyKeyOf, once, REPLAYED_HEADER, requestFingerprint } from "./idempotency-key";
import { readJsonObject } from "./json-body";
import { clientIp, countFailedAuth, limitApp } from "./rate-limits";
import { requestIdOf, requestIds } from "./request-id";
import { normalizeFields } from "./request-text";
import { routedPath } from "./router";
import { securityHeaders } from "./security-headers";
import { busyError, retryReads } from "./service-busy";
import { refuseBadText } from "./text-hygiene";

export const app = new Hono<{ Bindings: Env }>({ router: new RegExpRouter(), getPath: routedPath });

// First: a Request-Id on every response, and on every JSON error answer its requestid, docs link and log line (request-id.ts).
app.use(requestIds);
// Bench instrumentation, off unless the var D1_QUERY_COUNT is set (see d1-metrics.ts).
app.use(d1Metrics);
// nosniff on every response, a Referrer-Policy on every HTML page (security-headers.ts).
app.use(securityHeaders);
// D1 busy or down: a failed read is retried once; what still fails is a 503 service_busy (onError below).
app.use(retryReads);

app.get("/health", (c) => c.json({ success: true, message: "ok" }));
app.route("/", homeRoutes);

// The isolate's D1 round trips by source, for the bench's all-in counts; only with D1_QUERY_COUNT set.
app.get(TOTALS_PATH, (c) => (metricsEnabled(c.env) ? c.json(d1Totals()) : c.notFound()));

app.all("/saas/v1_0/:operation", async (c) => {
	const name = c.req.param("operation").toLowerCase();
	const operation = Object.hasOwn(operations, name) ? operations[name as keyof typeof operations] : undefined;
	if (!operation) throw new ApiError(404, "unknown_operation", `Unknown operation '${c.req.param("operation")}'.`);
	if (c.req.method !== "POST") {
		c.header("Allow", "POST");
		throw new ApiError(405, "method_not_allowed", "Operations are called with POST.");
	}
	const key = operation.mutating ? idempotencyKeyOf(c.req.raw.headers) : null;
	const body = normalizeFields(await readJsonObject(c.req.raw));
	const ip = clientIp(c.req.raw);
	const tenant = await authenticate(c.env.DB, body, (apikey) => countFailedAuth(c.env, apikey, ip));
	// The key pair decides the mode (docs/test-mode.md): a `?mode=` saying otherwise is refused, never ignored (issue 47).
	const mode = c.req.query("mode");
	if (mode !== undefined && mode !== (tenant.livemode ? "live" : "test"))
		throw badRequest("mode: the key pair decides the mode; send the test keys (ak_test_...) for test mode, with no mode.", {
			fields: ["mode"],
		});
	await limitApp(c.env, tenant.appid);
	// Work after the answer (enqueues the outbox sweep would otherwise redo): a failure is logged, never an unhandled rejection.
	const waitUntil = (p: Promise<unknown>) =>
		c.executionCtx.waitUntil(
			p.catch((error) => console.error(JSON.stringify({ msg: "background task failed", operation: name, error: String(error) }))),
		);
	const run = async (idempotency?: { key: string; fingerprint: string }) => {
		refuseBadText(body);
		const parsed = operation.schema.safeParse(body);
		if (!parsed.success) {
			const { message, fields, errors } = describeZodError(parsed.error, body);
			throw new ApiError(400, "validation_failed", message, { fields, errors });
		}
		// Links in answers on the deployment's public origin (issue 47); a deployment without PUBLIC_ORIGIN answers on the request's.
		const ctx = { env: c.env, app: tenant, origin: publicOrigin(c.env) ?? new URL(c.req.url).origin, waitUntil, idempotency };
		const { message = "Success", ...fields } = await operation.handle(ctx, parsed.data as never);
		const warnings = unknownFieldWarnings(operation.schema, body);
		return { status: 200, body: { success: true, message, ...fields, ...(warnings.length > 0 ? { warnings } : {}) } };
	};
	if (key === null) {
		const answer = await run();
		return c.json(answer.body);
	}
	const fingerprint = await requestFingerprint(name, body);
	const reference = { requestid: requestIdOf(c.req.raw), origin: new URL(c.req.url).origin };
	const answer = await once({ db: c.env.DB, appid: tenant.appid, key, operation: name, fingerprint, waitUntil, ...reference }, () =>
		run({ key, fingerprint }),
	);
	return c.body(answer.body, answer.status as ContentfulStatusCode, {
		"content-type": "application/json",
		...(answer.replayed ? { [REPLAYED_HEADER]: "true" } : {}),
	});
});

/** Fields every call carries besides the operation's own. */
const ENVELOPE_FIELDS = new Set(["apikey", "privatekey"]);

/**
 * The top-level fields the operation does not know: ignored, never refused
 * (existing clients send extra fields), but listed in the answer's
 * `warnings` so a misspelt field name shows at once.
 */
function unknownFieldWarnings(schema: z.ZodType, body: Record<string, unknown>): { field: string; message: string }[] {
	if (!(schema instanceof z.ZodObject)) return [];
	const known = new Set(Object.keys(schema.shape));
	return Object.keys(body)
		.filter((field) => !known.has(field) && !ENVELOPE_FIELDS.has(field))
		.map((field) => ({ field, message: "unknown field: ignored" }));
}

app.route("/admin/v1", adminRoutes);
app.route("/", stripeWebhookRoutes);
app.route("/r", shareLinkRoutes);
app.route("/dashboard", dashboardRoutes);
app.route("/", devMailRoutes);
app.route("/", sharePageRoutes);
app.route("/", logoFileRoutes);
app.route("/", openApiRoutes);

app.notFound((c) => c.json(errorBody("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}.`), 404));

app.onError((err, c) => {
	const busy = busyError(err);
	if (busy) {
		console.error(
			JSON.stringify({
				msg: "D1 unavailable: answered 503 service_busy",
				requestid: requestIdOf(c.req.raw),
				path: c.req.path,
				// Which database failed (DB or SHARD_<n>, issue 50): a shard's trouble shows as its own.
				database: unavailableDatabase(err),
				error: String(err),
			}),
		);
		err = busy;
	}
	if (err instanceof ApiError) {
		for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
		return c.json(errorBody(err.errorcode, err.message, err.extra), err.status);
	}
	if (err instanceof z.ZodError) {
		const { message, fields, errors } = describeZodError(err);
		return c.json(errorBody("validation_failed", message, { fields, errors }), 400);
	}
	console.error(
		JSON.stringify({ msg: "unhandled error", requestid: requestIdOf(c.req.raw), error: String(err), stack: (err as Error).stack }),
	);
	return c.json(errorBody("internal_error", "Internal error."), 500);
});
