import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ERROR_CODES } from "../../src/openapi/error-codes";
import { ADMIN_TOKEN, createApp, request } from "../support/api";
import { signIn } from "../support/dashboard";

/**
 * Errors a program can act on (issue 51): every error answer carries a
 * request id, the same in the `Request-Id` header and in the service's log
 * line of that answer, and a `docs` link to its code's heading in
 * docs/api.md (the file the service serves at /docs/api.md).
 */
const API_DOC = import.meta.glob<string>("../../docs/api.md", { query: "?raw", import: "default", eager: true })["../../docs/api.md"] ?? "";

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const slug = (heading: string) =>
	heading
		.toLowerCase()
		.replace(/[^\p{L}\p{N}_\- ]/gu, "")
		.replaceAll(" ", "-");
const ANCHORS = new Set([...API_DOC.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] ?? "")));
const REQUEST_ID = /^req_[0-9a-f]{32}$/;

let logged: string[] = [];
function captureLogs() {
	logged = [];
	for (const level of ["log", "warn", "error"] as const)
		vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
			logged.push(args.map(String).join(" "));
		});
}
afterEach(() => vi.restoreAllMocks());

/** The log line of the answer with this id, parsed. */
const logLineOf = (requestid: string) =>
	logged.map((line) => (line.startsWith("{") ? JSON.parse(line) : null)).find((l) => l?.requestid === requestid);

type TestApp = Awaited<ReturnType<typeof createApp>>;
const op = (app: TestApp, name: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
	request(`/saas/v1_0/${name}`, {
		method: "POST",
		headers: { "content-type": "application/json", ...headers },
		body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, ...body }),
	});

async function expectActionable(res: Response, status: number, errorcode: string) {
	expect(res.status).toBe(status);
	const body = (await res.json()) as Record<string, unknown>;
	// The envelope keeps its shape (docs/api.md): the two fields are additions.
	expect(body).toMatchObject({ success: false, errorcode, message: expect.any(String) });
	expect(body.requestid).toMatch(REQUEST_ID);
	expect(res.headers.get("Request-Id")).toBe(body.requestid);
	expect(logLineOf(String(body.requestid))).toMatchObject({ msg: "error answer", status, errorcode });
	const docs = new URL(String(body.docs));
	expect(`${docs.origin}${docs.pathname}`).toBe("http://service.test/docs/api.md");
	expect(docs.hash).toBe(`#${errorcode}`);
	expect(ANCHORS.has(errorcode)).toBe(true);
	return body;
}

describe("error answers", () => {
	it("of the public operations carry a request id in the body, the header and the log line, and a docs link", async () => {
		captureLogs();
		const app = await createApp();
		await expectActionable(await op(app, "getuserbalance", { userkey: "nobody-here", campaignid: app.campaignid }), 404, "user_not_found");
		const bad = await expectActionable(await op(app, "register", { email: "not an email" }), 400, "validation_failed");
		expect(bad.fields).toBeDefined();
		const noKeys = await request("/saas/v1_0/getuserbalance", {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: "{}",
		});
		await expectActionable(noKeys, 401, "missing_credentials");
		await expectActionable(await request("/saas/v1_0/nosuchoperation", { method: "POST", body: "{}" }), 404, "unknown_operation");
		await expectActionable(await request("/no/such/path"), 404, "not_found");
	});

	it("each have their own request id", async () => {
		captureLogs();
		const ids = new Set<unknown>();
		for (let i = 0; i < 3; i++) ids.add(((await (await request("/no/such/path")).json()) as { requestid: string }).requestid);
		expect(ids.size).toBe(3);
	});

	it("of the admin API carry them too", async () => {
		captureLogs();
		await expectActionable(await request("/admin/v1/apps", { headers: { authorization: "Bearer wrong" } }), 401, "unauthorized");
		const missing = await request("/admin/v1/apps/app_doesnotexist", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
		await expectActionable(missing, 404, "app_not_found");
	});

	it("of an idempotent replay are the first answer byte for byte; the replay's own id is in its header and log line", async () => {
		captureLogs();
		const app = await createApp();
		const key = `k-${crypto.randomUUID()}`;
		const send = () => op(app, "register", { email: "not an email" }, { "idempotency-key": key });
		const first = await expectActionable(await send(), 400, "validation_failed");
		const again = await send();
		expect(again.headers.get("Idempotent-Replayed")).toBe("true");
		const own = again.headers.get("Request-Id") ?? "";
		expect(own).toMatch(REQUEST_ID);
		expect(own).not.toBe(first.requestid);
		expect(await again.json()).toEqual(first);
		expect(logLineOf(own)).toMatchObject({ msg: "error answer", status: 400, replayof: first.requestid });
	});

	it("of the dashboard are pages showing the request id, logged, and the docs link", async () => {
		const session = await signIn();
		captureLogs();
		const res = await session.get("/dashboard/apps/app_doesnotexist");
		expect(res.status).toBe(404);
		const requestid = res.headers.get("Request-Id") ?? "";
		expect(requestid).toMatch(REQUEST_ID);
		const html = await res.text();
		expect(html).toContain(`<code>${requestid}</code>`);
		expect(html).toContain('href="http://service.test/docs/api.md#not_found"');
		expect(logLineOf(requestid)).toMatchObject({ msg: "error answer", status: 404, errorcode: "not_found" });
	});

	it("a success carries the Request-Id header and nothing more", async () => {
		const res = await request("/health");
		expect(res.headers.get("Request-Id")).toMatch(REQUEST_ID);
		expect(await res.json()).toEqual({ success: true, message: "ok" });
	});
});

describe("docs/api.md", () => {
	it("has a heading for every error code, so every docs link resolves", () => {
		expect(ERROR_CODES.filter((code) => !ANCHORS.has(code))).toEqual([]);
	});

	it("is what the service serves at the links' address", async () => {
		// The static assets answer it before the Worker runs (wrangler.toml run_worker_first).
		const res = await env.ASSETS.fetch("http://service.test/docs/api.md");
		expect(res.status).toBe(200);
		expect(await res.text()).toBe(API_DOC);
	});
});
