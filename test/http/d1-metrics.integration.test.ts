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
	const app = new Hono<{ Bindings: Env }>()
		.use(d1Metrics)
		.get("/probe", async (c) => {
			await c.env.DB.prepare("SELECT 1 AS x").first();
			return c.text("ok");
		})
		// Issue 50: the shards are counted as DB is, each on its own line and in the total.
		.get("/shards", async (c) => {
			await c.env.DB.prepare("SELECT 1 AS x").first();
			await c.env.SHARD_1.prepare("SELECT 1 AS x").first();
			await c.env.SHARD_3.batch([c.env.SHARD_3.prepare("SELECT 1 AS x"), c.env.SHARD_3.prepare("SELECT 2 AS y")]);
			await c.env.SHARD_3.prepare("SELECT 3 AS z").all();
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

	it("counts every shard's round trips per shard and in the total, in the headers and the totals", async () => {
		const before = d1Totals();
		const res = await app.request("/shards", { headers: { [COUNT_HEADER]: "1" } }, flagged);
		expect(res.headers.get("x-d1-roundtrips")).toBe("4");
		expect(res.headers.get("x-d1-statements")).toBe("5");
		expect(res.headers.get("x-d1-roundtrips-by-database")).toBe("DB=1, SHARD_1=1, SHARD_3=2");
		const after = d1Totals();
		expect(after.worker.roundtrips - before.worker.roundtrips).toBe(4);
		expect(after.total.roundtrips - before.total.roundtrips).toBe(4);
		const delta = (name: string) => (after.byDatabase[name]?.roundtrips ?? 0) - (before.byDatabase[name]?.roundtrips ?? 0);
		expect(["DB", "SHARD_0", "SHARD_1", "SHARD_2", "SHARD_3"].map(delta)).toEqual([1, 0, 1, 0, 2]);
		expect(after.byDatabase.SHARD_3?.statements).toBeGreaterThanOrEqual(3);
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
