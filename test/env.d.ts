import type { D1Migration } from "cloudflare:test";

declare global {
	namespace Cloudflare {
		interface Env {
			/** Test-only: the migrations read by vitest.config.ts, applied in test/apply-migrations.ts. */
			TEST_MIGRATIONS: D1Migration[];
			/** Test-only: migrations-shard/, applied to every SHARD_<n> in test/apply-migrations.ts. */
			TEST_SHARD_MIGRATIONS: D1Migration[];
			/** Test-only: base URL of the real HTTP webhook receiver started by test/outbox/receiver.mjs. */
			WEBHOOK_RECEIVER_URL: string;
			/** Webhook connect and first-byte timeout in ms (optional in production, default 1500; low in tests). */
			WEBHOOK_TIMEOUT_MS?: string;
			/** Test-only: a real rate limiter of 5 per 10 s (vitest.config.ts), for the per-app limit test. */
			TEST_SMALL_LIMITER: RateLimit;
		}
	}
}

declare module "vitest" {
	export interface ProvidedContext {
		/** Set by test/outbox/receiver.mjs (globalSetup). */
		webhookReceiverUrl: string;
	}
}
