import { Hono } from "hono";
import { z } from "zod";
import { adminRoutes } from "../admin/routes";
import { openApiRoutes } from "../openapi/routes";
import { operations } from "../operations";
import { shareLinkRoutes } from "../operations/share-link";
import { sharePageRoutes } from "../sharepage/routes";
import { authenticate } from "./auth";
import { d1Metrics } from "./d1-metrics";
import { ApiError, errorBody } from "./errors";
import { describeZodError } from "./fields";
import { readJsonObject } from "./json-body";
import { normalizeFields } from "./request-text";

export const app = new Hono<{ Bindings: Env }>();

// Bench instrumentation, off unless the var D1_QUERY_COUNT is set (see d1-metrics.ts).
app.use(d1Metrics);

app.get("/health", (c) => c.json({ success: true, message: "ok" }));

app.all("/saas/v1_0/:operation", async (c) => {
	const name = c.req.param("operation").toLowerCase();
	const operation = Object.hasOwn(operations, name) ? operations[name as keyof typeof operations] : undefined;
	if (!operation) throw new ApiError(404, "unknown_operation", `Unknown operation '${c.req.param("operation")}'.`);
	if (c.req.method !== "POST") {
		c.header("Allow", "POST");
		throw new ApiError(405, "method_not_allowed", "Operations are called with POST.");
	}
	const body = normalizeFields(await readJsonObject(c.req.raw));
	const tenant = await authenticate(c.env.DB, body);
	const parsed = operation.schema.safeParse(body);
	if (!parsed.success) {
		const { message, fields } = describeZodError(parsed.error);
		throw new ApiError(400, "validation_failed", message, { fields });
	}
	const result = await operation.handle(
		{
			env: c.env,
			app: tenant,
			origin: new URL(c.req.url).origin,
			waitUntil: (p) => c.executionCtx.waitUntil(p),
		},
		parsed.data as never,
	);
	const { message = "Success", ...fields } = result;
	return c.json({ success: true, message, ...fields });
});

app.route("/admin/v1", adminRoutes);
app.route("/r", shareLinkRoutes);
app.route("/", sharePageRoutes);
app.route("/", openApiRoutes);

app.notFound((c) => c.json(errorBody("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}.`), 404));

app.onError((err, c) => {
	if (err instanceof ApiError) return c.json(errorBody(err.errorcode, err.message, err.extra), err.status);
	if (err instanceof z.ZodError) {
		const { message, fields } = describeZodError(err);
		return c.json(errorBody("validation_failed", message, { fields }), 400);
	}
	console.error("unhandled error", err);
	return c.json(errorBody("internal_error", "Internal error."), 500);
});
