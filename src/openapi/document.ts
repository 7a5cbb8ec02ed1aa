import { z } from "zod";
import { ruleFor } from "../admin/rights";
import { takesMode } from "../admin/test-mode";
import { COLON } from "../http/router";
import { operations } from "../operations";
import { adminApi } from "./admin";
import type { AdminRoute } from "./admin-route";
import { dashboardPaths, devPaths } from "./dashboard";
import { ERROR_CODES } from "./error-codes";
import { genericSuccess, operationResponses } from "./responses";

/**
 * The OpenAPI 3.1 document, built from the zod schemas the handlers validate
 * with (requests, read as input) and the success shapes of responses.ts
 * (read as output). Every operation of the registry is in it, so an operation
 * added later appears without touching this file.
 */

/** Operations that change state: they take an `Idempotency-Key` header. */
export const MUTATING_OPERATIONS = new Set([
	"register",
	"updateuser",
	"applyreferrercode",
	"registerconversionevent",
	"redeemrewards",
	"changerewardstatus",
	"invokeoutreach",
	"remindfriend",
	"reverseconversionevent",
]);

const SUMMARIES: Record<string, string> = {
	getcampaigndata: "A campaign's public data (offer, styling, social actions, reward rules)",
	campaignterms: "A campaign's terms",
	register: "Register a user (or find the one already registered), optionally with a referrer code",
	updateuser: "Change a user's profile fields",
	applyreferrercode: "Set a user's referrer, once",
	validatereferrercode: "Check a referral code and see whose it is",
	registerconversionevent: "Record a conversion event (once per customid) and grant the rewards it earns",
	getuserbalance: "A user's earnings by unit, growth hack and campaign",
	getfriendsandrewards: "A user's friends, a page at a time, with the rewards each earned the user",
	redeemrewards: "Redeem approved wallet rewards, by ids or by amount",
	changerewardstatus: "Approve, reject or hold rewards (all or none)",
	checkrewardstatus: "A reward's status",
	invokeoutreach: "Email a user their share link",
	remindfriend: "Email a friend a reminder (once per 24 h)",
	getsharepage: "A signed link (1 hour) to the user's hosted referral page",
	getleaderboard: "A campaign's referrers ranked by friends converted in a period (all, month, week), and one user's rank",
};

type Schema = Record<string, unknown>;

/** JSON Schema of a zod schema; transforms and refinements are invisible to it, so they become their input side. */
export function jsonSchema(schema: z.ZodType, io: "input" | "output"): Schema {
	const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Schema;
	return rest;
}

const errorEnvelope = {
	type: "object",
	description: "Every failure. Clients switch on `errorcode`, never on `message`.",
	properties: {
		success: { const: false },
		message: { type: "string" },
		errorcode: { type: "string", enum: [...ERROR_CODES] },
		fields: { type: "array", items: { type: "string" }, description: "The request fields a validation_failed names" },
		errors: {
			type: "array",
			description: "validation_failed: each failing field and what it needs",
			items: {
				type: "object",
				properties: { field: { type: "string" }, message: { type: "string" } },
				required: ["field", "message"],
			},
		},
		statuscode: { type: "integer", description: "Legacy status of some operations" },
		requestid: {
			type: "string",
			description: "This request's id (also the Request-Id header): quote it to the operator, who finds it in the log line of this answer",
		},
		docs: { type: "string", format: "uri", description: "The code's entry in docs/api.md (`<origin>/docs/api.md#<errorcode>`)" },
	},
	required: ["success", "message", "errorcode"],
	additionalProperties: true,
};

const errorResponse = (description: string) => ({
	description,
	content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const OPERATION_ERRORS = {
	"400": errorResponse("Invalid JSON or a field that fails validation (validation_failed, invalid_json, ...)"),
	"401": errorResponse("Missing or wrong apikey/privatekey"),
	"404": errorResponse("The user, campaign, reward or code named does not exist in this app"),
	"409": errorResponse("The request conflicts with the current state (e.g. insufficient_balance, referrer_already_set)"),
	"410": errorResponse("The user named was erased (user_erased): erasure is final, nothing more can be done with it"),
	"413": errorResponse("Body too large"),
	"415": errorResponse("Body is not JSON"),
	"429": errorResponse("Rate limited"),
	"500": errorResponse("Internal error"),
	"503": errorResponse(
		"The database is busy or unavailable (service_busy, retryable: true): retry after the Retry-After header's seconds; nothing half done is left",
	),
};

function operationRequest(schema: z.ZodType): Schema {
	const input = jsonSchema(schema, "input");
	const properties = (input.properties ?? {}) as Record<string, unknown>;
	return {
		...input,
		type: "object",
		properties: {
			apikey: { type: "string", description: "The app's API key" },
			privatekey: { type: "string", description: "The app's private key (server side only)" },
			...properties,
		},
		required: ["apikey", "privatekey", ...((input.required as string[] | undefined) ?? [])],
	};
}

function publicPaths(): Record<string, unknown> {
	const paths: Record<string, unknown> = {};
	for (const [name, operation] of Object.entries(operations).sort(([a], [b]) => a.localeCompare(b))) {
		const response = operationResponses[name] ?? genericSuccess;
		paths[`/saas/v1_0/${name}`] = {
			post: {
				operationId: name,
				tags: ["Operations"],
				summary: SUMMARIES[name] ?? name,
				description:
					"Field names are matched case-insensitively and a few legacy aliases are accepted (e.g. `userKey`, `growthHack`, `emailId`); text may be form-URL-encoded.",
				...(MUTATING_OPERATIONS.has(name) ? { parameters: [{ $ref: "#/components/parameters/IdempotencyKey" }] } : {}),
				requestBody: { required: true, content: { "application/json": { schema: operationRequest(operation.schema) } } },
				responses: {
					"200": { description: "Success", content: { "application/json": { schema: jsonSchema(response, "output") } } },
					...OPERATION_ERRORS,
				},
			},
		};
	}
	return paths;
}

/** The least role a route needs (admin/rights.ts), from a sample path of its OpenAPI form (as routed: http/router.ts). */
function neededRole(route: AdminRoute): string {
	const rule = ruleFor(route.method.toUpperCase(), route.path.replace(/\{(\w+)\}/g, "x").replaceAll(":", COLON));
	if (!rule) throw new Error(`admin route without a rule in rights.ts: ${route.method} ${route.path}`);
	return rule.needed;
}

/** A body sent as its bytes (an uploaded logo), one entry per content type. */
const rawRequestBody = (raw: NonNullable<AdminRoute["rawBody"]>) => ({
	required: true,
	description: raw.description,
	content: Object.fromEntries(raw.types.map((type) => [type, { schema: { type: "string", format: "binary" } }])),
});

function adminOperation(route: AdminRoute): Record<string, unknown> {
	const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
		name: m[1],
		in: "path",
		required: true,
		schema: { type: "string" },
	}));
	const queryParams = Object.entries(route.query ?? {}).map(([name, schema]) => ({
		name,
		in: "query",
		required: false,
		schema: jsonSchema(schema, "input"),
	}));
	const modeParam = takesMode(route.method, route.path)
		? [
				{
					name: "mode",
					in: "query",
					required: false,
					description:
						"live (default) or test: the app's test data (users, rewards, stats, deliveries, breaker) or the campaign's test coupon pool (docs/test-mode.md)",
					schema: { type: "string", enum: ["live", "test"] },
				},
			]
		: [];
	const parameters = [...pathParams, ...queryParams, ...modeParam];
	return {
		operationId: `admin_${route.method}_${route.path
			.replace(/[{}]/g, "")
			.replace(/[^A-Za-z0-9]+/g, "_")
			.replace(/^_|_$/g, "")}`,
		tags: ["Admin"],
		summary: route.summary,
		description: `Needs the ${neededRole(route)} role (docs/operators.md).`,
		"x-required-role": neededRole(route),
		security: [{ adminToken: [] }],
		...(parameters.length ? { parameters } : {}),
		...(route.body
			? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(route.body, "input") } } } }
			: {}),
		...(route.rawBody ? { requestBody: rawRequestBody(route.rawBody) } : {}),
		responses: {
			[String(route.status)]: { description: "Success", content: { "application/json": { schema: jsonSchema(route.response, "output") } } },
			...Object.fromEntries(Object.entries(route.errors ?? {}).map(([status, when]) => [status, errorResponse(when)])),
			"400": errorResponse("Invalid body or parameter"),
			"401": errorResponse("Missing or wrong admin token"),
			"403": errorResponse("The caller's role is below the one this route needs (forbidden, with needed and role)"),
			"404": errorResponse("No such app, campaign or delivery"),
			"429": errorResponse("Too many failed admin sign-ins from this address (rate_limited; see Retry-After)"),
			"503": errorResponse(
				"A deployment whose ADMIN_TOKEN is shorter than 32 characters or a documented default (admin_token_insecure); an invitation on a deployment without PUBLIC_ORIGIN (public_origin_unset)",
			),
		},
	};
}

function adminPaths(): Record<string, Record<string, unknown>> {
	const paths: Record<string, Record<string, unknown>> = {};
	for (const route of adminApi) {
		const path = `/admin/v1${route.path}`;
		paths[path] = { ...paths[path], [route.method]: adminOperation(route) };
	}
	return paths;
}

/** The endpoint Stripe sends an app's events to (docs/stripe.md). */
const integrationPaths = () => ({
	"/integrations/stripe/{appid}": {
		post: {
			operationId: "integrations_stripe_webhook",
			tags: ["Integrations"],
			summary:
				"Stripe events of a connected app: invoice.paid and checkout.session.completed become conversions, charge.refunded reverses them",
			description:
				"Authenticated by the Stripe-Signature header (HMAC-SHA256 of `{t}.{payload}` with the app's webhook secret, 5 minutes of tolerance). Handled events are queued; every other type is answered 200 and counted.",
			parameters: [
				{ name: "appid", in: "path", required: true, schema: { type: "string" } },
				{ name: "Stripe-Signature", in: "header", required: true, schema: { type: "string" } },
			],
			requestBody: { required: true, content: { "application/json": { schema: { type: "object", description: "A Stripe event" } } } },
			responses: {
				"200": {
					description: "Received",
					content: {
						"application/json": {
							schema: {
								type: "object",
								properties: { received: { const: true }, handled: { type: "boolean" } },
								required: ["received", "handled"],
							},
						},
					},
				},
				"400": errorResponse("A bad or stale Stripe-Signature (invalid_signature): nothing changed"),
				"404": errorResponse("No app with that appid is connected to Stripe"),
			},
		},
	},
});

/** The whole document; `serverUrl` is where this service answers. */
export function openApiDocument(serverUrl: string) {
	return {
		openapi: "3.1.0",
		info: {
			title: "Referral and rewards API",
			version: "1.0.0",
			description:
				"Public operations are `POST /saas/v1_0/<operation>` with a JSON body carrying `apikey` and `privatekey`. The admin API (`/admin/v1`) takes `Authorization: Bearer <ADMIN_TOKEN>`. See docs/integration.md for a walk-through.",
		},
		servers: [{ url: serverUrl }],
		tags: [
			{ name: "Operations", description: "The public API, called from your back end" },
			{ name: "Admin", description: "Apps, campaigns, coupons and deliveries" },
			{ name: "Integrations", description: "Endpoints other services call: Stripe's events" },
			{ name: "Dashboard", description: "The dashboard's passkey routes a browser script calls (docs/operators.md, Passkeys)" },
			{ name: "Development", description: "Local development only (ENVIRONMENT=development): a deployed Worker answers 404" },
		],
		paths: { ...publicPaths(), ...adminPaths(), ...integrationPaths(), ...dashboardPaths(), ...devPaths() },
		components: {
			schemas: { Error: errorEnvelope },
			parameters: {
				IdempotencyKey: {
					name: "Idempotency-Key",
					in: "header",
					required: false,
					description: "Any unique string (e.g. a UUID) per logical request: a retry with the same key does not repeat the change.",
					schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
				},
			},
			securitySchemes: { adminToken: { type: "http", scheme: "bearer" } },
		},
	};
}
