// The history checker (test/e2e/history/, docs/stripe.md "History checker") from the command line:
//   npm run history -- --seed 7              replays seed 7
//   npm run history -- --seeds 20            runs seeds 1..20 (one wrangler dev for all, each seed its own app)
//   npm run history -- --seeds 20 --from 100 --ops 300 --clients 8
//   npm run history -- --seed 8 --quiet 180  a quiet phase of 180 s instead of 90 (a loaded machine)
// It runs test/e2e/history.e2e.test.ts under the e2e config with HISTORY_SEEDS / HISTORY_OPS / HISTORY_CLIENTS.
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";

const { values } = parseArgs({
	options: {
		seed: { type: "string" },
		seeds: { type: "string" },
		from: { type: "string", default: "1" },
		ops: { type: "string", default: "200" },
		clients: { type: "string", default: "6" },
		quiet: { type: "string", default: "90" },
	},
});
const seeds = values.seed
	? values.seed.split(",")
	: Array.from({ length: Number(values.seeds ?? 3) }, (_, i) => String(Number(values.from) + i));
const started = Date.now();
const run = spawnSync(
	"npx",
	["vitest", "run", "--config", "test/e2e/vitest.config.ts", "test/e2e/history.e2e.test.ts", "--reporter", "verbose"],
	{
		stdio: "inherit",
		env: {
			...process.env,
			HISTORY_SEEDS: seeds.join(","),
			HISTORY_OPS: values.ops,
			HISTORY_CLIENTS: values.clients,
			HISTORY_QUIET_MS: String(Number(values.quiet) * 1000),
		},
	},
);
console.log(`history: seeds ${seeds.join(",")} in ${Math.round((Date.now() - started) / 1000)} s, exit ${run.status}`);
process.exit(run.status ?? 1);
