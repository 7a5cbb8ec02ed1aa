import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { app as worker } from "../../src/http/app";
import { forgetCachedKey } from "../../src/http/auth";
import { BREAKER } from "../../src/instrument/d1-breaker";
import { withBindings } from "../../src/instrument/d1-metrics";
import { d1DownFrom } from "../http/d1-down";
import { ADMIN_TOKEN, createApp } from "../support/api";

// Issue 50, per-shard health: every shard binding gets the wrappers DB has
// (a failed read retried once; D1 busy or down answered 503 service_busy with
// Retry-After), the failing shard named in the log, and a shard that is down
// fails only the requests that need it. The shard is taken down as the
// service-busy tests take D1 down: its binding answers D1's own "overloaded"
// error from its first round trip on (test/http/d1-down.ts).

type Fixture = Awaited<ReturnType<typeof createApp>>;
let fx: Fixture;

beforeAll(async () => {
	fx = await createApp();
});

const admin = (path: string) => new Request(`http://service.test/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

/** Sends `request` to the Worker with `bindings` in place of the env's; the answer, its body and the error lines logged. */
async function send(request: Request, bindings: Partial<Env> = {}) {
	const log = vi.spyOn(console, "error").mockImplementation(() => {});
	try {
		const ctx = createExecutionContext();
		const res = await worker.fetch(request, withBindings(env, bindings), ctx);
		const text = await res.text();
		await waitOnExecutionContext(ctx);
		return { res, text, logged: log.mock.calls.map((args) => String(args[0])) };
	} finally {
		log.mockRestore();
	}
}

describe("one shard down", () => {
	it("answers 503 service_busy for a request that needs it, naming the shard in the log only", async () => {
		const down = d1DownFrom(env.SHARD_2 as D1Database, 1);
		const failed = await send(admin("/shards/2"), { SHARD_2: down.db });
		expect(failed.res.status, failed.text).toBe(503);
		expect(failed.res.headers.get("retry-after")).toBe("2");
		expect(JSON.parse(failed.text)).toMatchObject({ success: false, errorcode: "service_busy", retryable: true });
		expect(failed.text).not.toContain("SHARD_2");
		const line = failed.logged.map((l) => JSON.parse(l)).find((l) => l.msg === "D1 unavailable: answered 503 service_busy");
		expect(line).toMatchObject({ database: "SHARD_2", path: "/admin/v1/shards/2" });
		// Its read was retried once before the answer: two round trips, both refused.
		expect(down.calls).toBe(2);
	});

	it("serves the requests that need another shard, or only the control database", async () => {
		const down = d1DownFrom(env.SHARD_2 as D1Database, 1);
		for (const shard of [0, 1, 3]) {
			const served = await send(admin(`/shards/${shard}`), { SHARD_2: down.db });
			expect(served.res.status, served.text).toBe(200);
			expect(JSON.parse(served.text)).toMatchObject({ shard, binding: `SHARD_${shard}`, identityok: true, shardcount: 4 });
		}
		forgetCachedKey(fx.apikey);
		const operation = await send(
			new Request("http://service.test/saas/v1_0/campaignterms", {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ apikey: fx.apikey, privatekey: fx.privatekey, campaignid: fx.campaignid }),
			}),
			{ SHARD_2: down.db },
		);
		expect(operation.res.status, operation.text).toBe(200);
		expect(down.calls).toBe(0);
	});

	it("answers 503 for a view that needs every shard, never a view with a shard missing", async () => {
		const down = d1DownFrom(env.SHARD_1 as D1Database, 1);
		const failed = await send(admin("/shards"), { SHARD_1: down.db });
		expect(failed.res.status, failed.text).toBe(503);
		expect(failed.logged.map((l) => JSON.parse(l)).find((l) => l.msg?.startsWith("D1 unavailable"))).toMatchObject({ database: "SHARD_1" });
		const whole = await send(admin("/shards"));
		expect(whole.res.status, whole.text).toBe(200);
		const body = JSON.parse(whole.text);
		expect(body).toMatchObject({ shardcount: 4, hash: "fnv1a32-fmix32" });
		expect(
			body.shards.map((s: { shard: number; identityok: boolean; migrations: number }) => [s.shard, s.identityok, s.migrations > 0]),
		).toEqual([
			[0, true, true],
			[1, true, true],
			[2, true, true],
			[3, true, true],
		]);
	});

	it("retries a shard's read once when it is refused once", async () => {
		const once = d1DownFrom(env.SHARD_3 as D1Database, 1, 1);
		const served = await send(admin("/shards/3"), { SHARD_3: once.db });
		expect(served.res.status, served.text).toBe(200);
		expect(once.fired).toBe(true);
		expect(once.calls).toBe(2);
	});

	it("stops asking a shard that keeps refusing, for a moment, while the others serve; then asks it again", async () => {
		// Five refusals within a second open this isolate's breaker for SHARD_2 (instrument/d1-breaker.ts); the shard heals after five.
		const flaky = d1DownFrom(env.SHARD_2 as D1Database, 1, BREAKER.threshold);
		// Three requests at once (so their six reads fall well within the second, whatever the machine's load): the
		// fifth refusal opens the breaker, and the sixth read is not sent, in whatever order they come.
		const first = await Promise.all([0, 1, 2].map(() => send(admin("/shards/2"), { SHARD_2: flaky.db })));
		expect(first.map((r) => r.res.status)).toEqual([503, 503, 503]);
		expect(flaky.calls).toBe(BREAKER.threshold);
		const refused = await send(admin("/shards/2"), { SHARD_2: flaky.db });
		expect(refused.res.status, refused.text).toBe(503);
		expect(JSON.parse(refused.text)).toMatchObject({ errorcode: "service_busy", retryable: true });
		expect(refused.logged.map((l) => JSON.parse(l)).find((l) => l.msg?.startsWith("D1 unavailable"))).toMatchObject({
			database: "SHARD_2",
		});
		expect(flaky.calls, "an open breaker sends nothing").toBe(BREAKER.threshold);
		expect((await send(admin("/shards/0"), { SHARD_2: flaky.db })).res.status).toBe(200);
		await new Promise((resolve) => setTimeout(resolve, BREAKER.openMs + 50));
		const healed = await send(admin("/shards/2"), { SHARD_2: flaky.db });
		expect(healed.res.status, healed.text).toBe(200);
		expect(flaky.calls).toBe(BREAKER.threshold + 1);
	});

	it("answers 404 for a shard the pool does not have", async () => {
		for (const shard of ["4", "-1", "x", "00009"]) {
			const missing = await send(admin(`/shards/${shard}`));
			expect(missing.res.status, shard).toBe(404);
			expect(JSON.parse(missing.text)).toMatchObject({ errorcode: "not_found" });
		}
	});
});
