import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Runs before each test file: the same migrations wrangler applies, on that file's own storage.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
