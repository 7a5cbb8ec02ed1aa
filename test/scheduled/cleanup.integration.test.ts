import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { drain, expireIdempotencyKeys } from "../../src/cleanup";
import { scheduled } from "../../src/scheduled";

/** Issue 19: the clean-up jobs delete in bounded chunks until nothing is due, whatever is due. */

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
/** `n` rows from a recursive CTE: `i` runs 1..n. */
const numbers = (n: number) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})`;
const count = async (sql: string, ...args: unknown[]) =>
	(
		await env.DB.prepare(sql)
			.bind(...args)
			.first<{ n: number }>()
	)?.n;

async function run(cron: string, scheduledTime: number) {
	const ctx = createExecutionContext();
	await scheduled(createScheduledController({ cron, scheduledTime }), env, ctx);
	await waitOnExecutionContext(ctx);
}

async function seedKeys(appid: string, n: number, expiresAt: string) {
	await env.DB.prepare(
		`INSERT INTO idempotency_keys (appid, idempotency_key, operation, fingerprint, state, token, locked_until, created_at, expires_at)
		 ${numbers(n)} SELECT ?1, 'k' || i, 'register', 'fp', 'done', 't', 0, ?2, ?2 FROM n`,
	)
		.bind(appid, expiresAt)
		.run();
}

describe("clean-up jobs", { timeout: 120_000 }, () => {
	it("expire 50,000 idempotency keys in one every-minute run, and keep the live ones", async () => {
		const now = Date.now();
		await seedKeys("app_expired", 50_000, iso(now - 1000));
		await seedKeys("app_live", 100, iso(now + DAY));
		await run("* * * * *", now);
		expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE appid = 'app_expired'")).toBe(0);
		expect(await count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE appid = 'app_live'")).toBe(100);
	});

	it("purge 50,000 old click rows and 50,000 rows of delivered events and their attempts in one daily run", async () => {
		const now = Date.now();
		const old = iso(now - 31 * DAY);
		const recent = iso(now - DAY);
		await env.DB.prepare(
			`INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent) ${numbers(50_000)} SELECT 'OLDCODE', ?1, NULL, 'ua' FROM n`,
		)
			.bind(old)
			.run();
		await env.DB.prepare("INSERT INTO link_click_log (referralcode, clicked_at, iphash, useragent) VALUES ('NEWCODE', ?, NULL, 'ua')")
			.bind(recent)
			.run();
		// 20,000 events delivered 31 days ago with 30,000 attempts; one delivered yesterday; one never delivered.
		await env.DB.prepare(
			`INSERT INTO outbox_events (eventid, appid, kind, type, payload, created_at, enqueued_at, delivered_at)
			 ${numbers(20_000)} SELECT 'evt_old_' || i, 'app_c', 'webhook', 'reward.created', '{}', ?1, ?1, ?1 FROM n`,
		)
			.bind(old)
			.run();
		await env.DB.prepare(
			`INSERT INTO delivery_attempts (eventid, attempt, outcome, response_code, duration_ms, error, created_at)
			 ${numbers(30_000)} SELECT 'evt_old_' || (1 + i % 20000), 1 + i / 20000, 'delivered', 200, 5, NULL, ?1 FROM n`,
		)
			.bind(old)
			.run();
		await env.DB.batch([
			env.DB.prepare(
				"INSERT INTO outbox_events (eventid, appid, kind, type, payload, created_at, delivered_at) VALUES ('evt_recent', 'app_c', 'webhook', 'x', '{}', ?1, ?1)",
			).bind(recent),
			env.DB.prepare(
				"INSERT INTO outbox_events (eventid, appid, kind, type, payload, created_at) VALUES ('evt_pending', 'app_c', 'webhook', 'x', '{}', ?1)",
			).bind(old),
			env.DB.prepare(
				"INSERT INTO delivery_attempts (eventid, attempt, outcome, duration_ms, created_at) VALUES ('evt_recent', 1, 'delivered', 5, ?1), ('evt_pending', 1, 'failed', 5, ?2)",
			).bind(recent, old),
		]);

		await run("17 3 * * *", now);

		expect(await count("SELECT COUNT(*) AS n FROM link_click_log WHERE referralcode = 'OLDCODE'")).toBe(0);
		expect(await count("SELECT COUNT(*) AS n FROM link_click_log WHERE referralcode = 'NEWCODE'")).toBe(1);
		expect(await count("SELECT COUNT(*) AS n FROM outbox_events WHERE appid = 'app_c'")).toBe(2);
		// This test's attempts only: a test never assumes it has the database to itself.
		const attempts = await env.DB.prepare(
			"SELECT eventid FROM delivery_attempts WHERE eventid IN ('evt_pending', 'evt_recent') OR eventid LIKE 'evt_old_%' ORDER BY eventid",
		).all<{ eventid: string }>();
		expect(attempts.results.map((r) => r.eventid)).toEqual(["evt_pending", "evt_recent"]);
	});

	it("stop at their time budget, say they are behind, and carry on at the next run", async () => {
		const now = Date.now();
		await seedKeys("app_behind", 2_500, iso(now - 1000));
		const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
		try {
			const controller = createScheduledController({ cron: "* * * * *", scheduledTime: now });
			const first = await expireIdempotencyKeys(env, controller, 0);
			expect(first).toEqual({ deleted: 1000, chunks: 1, behind: true });
			expect(warn).toHaveBeenCalledWith(expect.stringContaining('"job":"idempotency-keys-expiry"'));
			expect(String(warn.mock.calls[0]?.[0])).toContain("clean-up job is behind");
			const second = await expireIdempotencyKeys(env, controller);
			expect(second).toEqual({ deleted: 1500, chunks: 2, behind: false });
		} finally {
			warn.mockRestore();
		}
	});

	it("drain: deletes chunk after chunk until a chunk is short", async () => {
		const sizes = [1000, 1000, 1000, 7];
		const calls: number[] = [];
		const result = await drain(
			"test",
			async (limit) => {
				calls.push(limit);
				return sizes.shift() ?? 0;
			},
			{ budgetMs: 60_000 },
		);
		expect(result).toEqual({ deleted: 3007, chunks: 4, behind: false });
		expect(calls).toEqual([1000, 1000, 1000, 1000]);
	});
});
