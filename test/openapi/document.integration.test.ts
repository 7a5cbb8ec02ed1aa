import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminRoutes } from "../../src/admin/routes";
import { COLON } from "../../src/http/router";
import { MUTATING_OPERATIONS } from "../../src/openapi/document";
import { operationResponses } from "../../src/openapi/responses";
import { operations } from "../../src/operations";
import { request } from "../support/api";

async function served() {
	const res = await request("/openapi.json");
	expect(res.status).toBe(200);
	expect(res.headers.get("content-type")).toMatch(/^application\/json/);
	return (await res.json()) as any;
}

/** Hono's `/apps/:appid` as OpenAPI's `/apps/{appid}`; a literal colon (`users%3Aimport`, http/router.ts) is a colon. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}").replaceAll(COLON, ":");

describe("GET /openapi.json", () => {
	it("is OpenAPI 3.1 with the server it was asked on", async () => {
		const doc = await served();
		expect(doc.openapi).toBe("3.1.0");
		expect(doc.servers).toEqual([{ url: "http://service.test" }]);
	});

	it("documents every registered operation, with its request schema and success shape", async () => {
		const doc = await served();
		const names = Object.keys(operations);
		expect(names.length).toBeGreaterThanOrEqual(15);
		for (const name of names) {
			const op = doc.paths[`/saas/v1_0/${name}`]?.post;
			expect(op, `operation ${name} is missing from the document`).toBeDefined();
			const body = op.requestBody.content["application/json"].schema;
			expect(body.required).toEqual(expect.arrayContaining(["apikey", "privatekey"]));
			expect(op.responses["200"].content["application/json"].schema.properties.success).toEqual({ type: "boolean", const: true });
			expect(op.responses["400"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
		}
		// Every operation of this branch has a specific success shape.
		expect(names.filter((n) => !operationResponses[n])).toEqual([]);
	});

	it("documents every route of the admin router", async () => {
		const doc = await served();
		const routes = adminRoutes.routes.filter((r) => r.method !== "ALL");
		expect(routes.length).toBeGreaterThanOrEqual(14);
		const missing = routes
			.filter((r) => !doc.paths[`/admin/v1${openApiPath(r.path)}`]?.[r.method.toLowerCase()])
			.map((r) => `${r.method} ${r.path}`);
		expect(missing, "admin routes without an entry in src/openapi/admin.ts").toEqual([]);
	});

	it("puts the Idempotency-Key header on the mutating operations only", async () => {
		const doc = await served();
		for (const name of Object.keys(operations)) {
			const params = doc.paths[`/saas/v1_0/${name}`].post.parameters ?? [];
			const has = params.some((p: any) => p.$ref === "#/components/parameters/IdempotencyKey");
			expect(has, name).toBe(MUTATING_OPERATIONS.has(name));
		}
		for (const name of ["register", "registerconversionevent", "redeemrewards", "changerewardstatus", "remindfriend"]) {
			expect(MUTATING_OPERATIONS.has(name)).toBe(true);
		}
		expect(doc.components.parameters.IdempotencyKey).toMatchObject({ name: "Idempotency-Key", in: "header" });
	});

	it("lists the error codes in the error envelope", async () => {
		const doc = await served();
		const envelope = doc.components.schemas.Error;
		expect(envelope.required).toEqual(["success", "message", "errorcode"]);
		expect(envelope.properties.errorcode.enum).toEqual(
			expect.arrayContaining(["validation_failed", "user_not_found", "insufficient_balance"]),
		);
	});

	it("reads request fields from the handlers' own zod schemas", async () => {
		const doc = await served();
		const register = doc.paths["/saas/v1_0/register"].post.requestBody.content["application/json"].schema;
		expect(Object.keys(register.properties)).toEqual(expect.arrayContaining(["email", "referrercode", "useraccountid"]));
		const event = doc.paths["/saas/v1_0/registerconversionevent"].post.requestBody.content["application/json"].schema;
		expect(event.required).toEqual(expect.arrayContaining(["userkey", "eventname", "customid", "growthhack"]));
		const patchApp = doc.paths["/admin/v1/apps/{appid}"].patch.requestBody.content["application/json"].schema;
		expect(patchApp.properties).toHaveProperty("frameorigin");
	});
});

describe("GET /docs", () => {
	it("serves the reference page from this Worker and Scalar's bundle from its static assets", async () => {
		const page = await request("/docs");
		expect(page.status).toBe(200);
		const html = await page.text();
		expect(html).toContain('<script src="/docs/scalar.js"></script>');
		expect(html).not.toMatch(/https?:\/\//);
		expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
		// Static assets are served before the Worker runs (wrangler.toml [assets]); the test reaches them through the binding.
		const bundle = await env.ASSETS.fetch("http://service.test/docs/scalar.js");
		expect(bundle.status).toBe(200);
		expect(bundle.headers.get("content-type")).toMatch(/javascript/);
		expect((await bundle.text()).length).toBeGreaterThan(1_000_000);
		expect(await (await request("/docs/init.js")).text()).toContain('url: "/openapi.json"');
	});
});
