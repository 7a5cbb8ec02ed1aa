import { defineConfig } from "vitest/config";

// End-to-end tests, in Node: `npx vitest run --config test/e2e/vitest.config.ts`.
// They start `wrangler dev` and a real webhook receiver and talk HTTP to both.
export default defineConfig({
	test: {
		root: new URL("../..", import.meta.url).pathname,
		// The SDK's tests run its packed package against `wrangler dev` too (packages/sdk/test).
		include: ["test/e2e/**/*.e2e.test.ts", "packages/sdk/test/**/*.test.ts"],
		testTimeout: 60_000,
		hookTimeout: 120_000,
		fileParallelism: false,
		setupFiles: ["test/e2e/setup.ts"],
		// GitHub's workflow parser imports its JSON schema without an import attribute (written for bundlers): transformed by vite.
		server: { deps: { inline: ["@actions/workflow-parser"] } },
	},
});
