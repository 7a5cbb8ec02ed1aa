import { describe, expect, it } from "vitest";
import { request } from "../support/api";

describe("GET /", () => {
	it("is a small HTML page linking the dashboard, the API reference and the health check (was a JSON 404)", async () => {
		const res = await request("/");
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toMatch(/^text\/html/);
		const html = await res.text();
		for (const href of ["/dashboard", "/docs", "/openapi.json", "/health"]) expect(html).toContain(`href="${href}"`);
		expect(res.headers.get("referrer-policy")).toBe("no-referrer");
	});
});
