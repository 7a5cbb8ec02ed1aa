import type { D1Migration } from "cloudflare:test";

declare global {
	namespace Cloudflare {
		interface Env {
			/** Test-only: the migrations read by vitest.config.ts, applied in test/apply-migrations.ts. */
			TEST_MIGRATIONS: D1Migration[];
			/** Test-only: base URL of the real HTTP webhook receiver started by test/outbox/receiver.mjs. */
			WEBHOOK_RECEIVER_URL: string;
			/** Webhook timeout in ms (optional in production, default 15000; low in tests). */
			WEBHOOK_TIMEOUT_MS?: string;
		}
	}
}

declare module "vitest" {
	export interface ProvidedContext {
		/** Set by test/outbox/receiver.mjs (globalSetup). */
		webhookReceiverUrl: string;
	}
}
