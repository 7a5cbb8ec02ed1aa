import type { D1Migration } from "cloudflare:test";

declare global {
	namespace Cloudflare {
		interface Env {
			/** Test-only: the migrations read by vitest.config.ts, applied in test/apply-migrations.ts. */
			TEST_MIGRATIONS: D1Migration[];
		}
	}
}
