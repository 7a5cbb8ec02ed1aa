import { execFileSync } from "node:child_process";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
	// The static assets as `wrangler dev` would copy them (wrangler.toml [build]; the plugin runs no build): the
	// served docs/api.md, target of every error answer's docs link, is the checkout's.
	execFileSync(process.execPath, ["scripts/static-assets.mjs"]);
	const migrations = await readD1Migrations("./migrations");
	// The shards' own schema (issue 50): applied to SHARD_0 ... SHARD_3 by test/apply-migrations.ts.
	const shardMigrations = await readD1Migrations("./migrations-shard");
	return {
		plugins: [
			// A function, so the webhook receiver's URL (from globalSetup) reaches the bindings.
			cloudflareTest(({ inject }) => ({
				wrangler: { configPath: "./wrangler.toml" },
				miniflare: {
					bindings: {
						ADMIN_TOKEN: "test-admin-token",
						// Local, not deployed: the short test token is served (src/http/admin-token.ts; tests of the refusal unset it).
						ENVIRONMENT: "development",
						// The deployment's public origin: the tests' requests go to http://service.test (test/support), so links in emails do too.
						PUBLIC_ORIGIN: "http://service.test",
						// The test receiver listens on 127.0.0.1 (see .dev.vars.example; never set in wrangler.toml).
						ALLOW_LOOPBACK_WEBHOOKS: "1",
						IP_HASH_KEY: "test-ip-hash-key",
						SECRETS_KEY: "test-secrets-key",
						TEST_MIGRATIONS: migrations,
						TEST_SHARD_MIGRATIONS: shardMigrations,
						WEBHOOK_RECEIVER_URL: inject("webhookReceiverUrl"),
						WEBHOOK_TIMEOUT_MS: "1000",
					},
					// A real rate limiter with a small limit, swapped in for APP_RATE_LIMITER by the test of the per-app limit.
					ratelimits: { TEST_SMALL_LIMITER: { namespace_id: "9001", simple: { limit: 5, period: 10 } } },
				},
			})),
		],
		test: {
			include: ["test/**/*.test.ts"],
			exclude: ["test/e2e/**"],
			globalSetup: ["./test/outbox/receiver.mjs"],
			setupFiles: ["./test/apply-migrations.ts"],
			// One workerd per vitest worker for all its files, not one per file: the suite's
			// 150 s of tests took about 850 s with a workerd started and the modules loaded
			// again for each of 148 files, and about 185 s without. Files then share D1, the
			// objects and globals, so every test reads only the rows it made (test/support's
			// listedApps, per-app counts) and restores what it patches.
			isolate: false,
			// A bound, not a speed check: on a loaded 2-core machine the seeded property tests took over vitest's default 5 s.
			testTimeout: 30_000,
		},
	};
});
