import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { COUNT_HEADER, d1Metrics } from "../../src/http/d1-metrics";
import { d1Totals } from "../../src/instrument/d1-metrics";

/**
 * The bench's request counting (src/http/d1-metrics.ts): with the flag, every
 * request is counted into the isolate's totals, and only a request that asks
 * (the bench's sequential samples) gets its own counting wrappers and the
 * headers; the load's requests run without wrappers, so the CPU the bench
 * measures is the service's.
 */
describe("d1Metrics", () => {
	// The flag on, the rest of the test env as it is (an object that inherits it).
	const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1", enumerable: true } });
	const app = new Hono<{ Bindings: Env }>().use(d1Metrics).get("/probe", async (c) => {
		await c.env.DB.prepare("SELECT 1 AS x").first();
		return c.text("ok");
	});

	it("counts a request that asks for its counts in its headers and in the totals", async () => {
		const before = d1Totals();
		const res = await app.request("/probe", { headers: { [COUNT_HEADER]: "1" } }, flagged);
		expect(res.headers.get("x-d1-roundtrips")).toBe("1");
		const after = d1Totals();
		expect(after.worker.roundtrips - before.worker.roundtrips).toBe(1);
		expect(after.requests - before.requests).toBe(1);
	});

	it("counts any other request into the totals only, without headers", async () => {
		const before = d1Totals();
		const res = await app.request("/probe", {}, flagged);
		expect(await res.text()).toBe("ok");
		expect(res.headers.has("x-d1-roundtrips")).toBe(false);
		const after = d1Totals();
		expect(after.worker.roundtrips - before.worker.roundtrips).toBe(1);
		expect(after.requests - before.requests).toBe(1);
	});
});
