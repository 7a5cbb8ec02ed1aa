import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { experimental_readRawConfig, unstable_readConfig } from "wrangler";
import { deployPlan, migrationCommands, refusal } from "../../scripts/deploy.mjs";
import { layoutOf } from "../../scripts/migrate.mjs";

// A deploy that cannot go to the wrong place (docs/deploy.md, issue 51): no
// deploy without an environment, every environment with its own names, every
// queue with a dead-letter queue. wrangler.toml is read by wrangler's own
// reader, the way `wrangler deploy --env <name>` reads it.
const ROOT = new URL("../..", import.meta.url).pathname;
const CONFIG = `${ROOT}wrangler.toml`;
const NO_NETWORK = new URL("./no-network.mjs", import.meta.url).pathname;
const DEPLOY = `${ROOT}scripts/deploy.mjs`;
const toml = readFileSync(CONFIG, "utf8");
const ENVIRONMENTS = Object.keys(experimental_readRawConfig({ config: CONFIG }).rawConfig.env ?? {});
const configOf = (env: string | undefined) => unstable_readConfig({ config: CONFIG, env }, { hideWarnings: true });
const REAL_ID = "0f3c6a1e-5b7d-4c2a-9e8f-1a2b3c4d5e6f";

describe("npm run deploy", () => {
	it("refuses without an environment, calling nothing", () => {
		const run = spawnSync("npm", ["run", "--silent", "deploy"], {
			cwd: ROOT,
			encoding: "utf8",
			timeout: 60_000,
			// Were it to reach wrangler (as `npm run deploy` did before), no login prompt and no account.
			env: { ...process.env, CI: "true", CLOUDFLARE_API_TOKEN: "", NODE_OPTIONS: "" },
		});
		expect(run.status).toBe(2);
		expect(run.stderr).toMatch(/usage: npm run deploy -- --env <staging\|production>/);
		expect(run.stderr).toMatch(/No environment given: nothing was deployed/);
	});

	it("refuses, under a guard that makes every process or socket throw, also `--env` without a name and an unknown one", () => {
		for (const args of [[], ["--env"], ["--env", "--dry-run"], ["--env", "qa"]]) {
			const run = spawnSync(process.execPath, ["--import", NO_NETWORK, DEPLOY, ...args], { encoding: "utf8", timeout: 20_000 });
			expect(run.status, args.join(" ")).toBe(2);
			expect(run.stderr).toMatch(/nothing was deployed/i);
			expect(run.stderr).not.toMatch(/no-network/);
		}
	});

	it("refuses an environment not provisioned yet (the placeholder database_id), also when only a shard's is left", () => {
		expect(refusal(["--env", "staging"], toml)).toMatch(
			/placeholder D1 database_id \(DB, SHARD_0, SHARD_1 and 30 more\): run `npm run provision -- --env staging` first/,
		);
		const allButOne = toml
			.replaceAll('database_id = "00000000-0000-4000-8000-000000000000"', `database_id = "${REAL_ID}"`)
			.replace(/database_id = "00000000-0000-4000-8000-1000000000(?!17")\d\d"/g, `database_id = "${REAL_ID}"`);
		expect(refusal(["--env", "production"], allButOne)).toMatch(/placeholder D1 database_id \(SHARD_17\)/);
	});

	it("refuses production with example values unless told they are meant; then migrates, then deploys", () => {
		const provisioned = toml.replace(/database_id = "00000000-0000-4000-8000-[0-9]{12}"/g, `database_id = "${REAL_ID}"`);
		expect(refusal(["--env", "production"], provisioned)).toMatch(/DEFAULT_EMAIL_SENDER = "referrals@example.com"/);
		expect(refusal(["--env", "production", "--allow-example-values"], provisioned)).toBeNull();
		expect(refusal(["--env", "staging"], provisioned)).toBeNull();
		const real = provisioned.replaceAll('"referrals@example.com"', '"referrals@mail.shop.test"');
		expect(refusal(["--env", "production"], real)).toBeNull();
		expect(deployPlan("production")).toEqual([...migrationCommands("production"), ["npx", "wrangler", "deploy", "--env", "production"]]);
		// Every database, control and shards, through one command that fails on a database behind the code (issue 50).
		expect(migrationCommands("production")).toEqual([["node", "scripts/migrate.mjs", "--env", "production", "--remote"]]);
	});

	it("is what package.json's deploy scripts run", () => {
		const scripts = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).scripts;
		expect(scripts.deploy).toBe("node scripts/deploy.mjs");
		for (const env of ENVIRONMENTS) expect(scripts[`deploy:${env}`]).toBe(`node scripts/deploy.mjs --env ${env}`);
	});
});

describe("wrangler.toml", () => {
	it("has a staging and a production environment", () => {
		expect(ENVIRONMENTS).toEqual(["staging", "production"]);
	});

	it("gives every queue of every environment (and of the local top level) a dead-letter queue", () => {
		for (const env of [undefined, ...ENVIRONMENTS]) {
			const { queues } = configOf(env);
			const dead = new Set(queues.consumers.map((c) => c.dead_letter_queue));
			expect(queues.consumers.length, String(env)).toBe(3);
			for (const consumer of queues.consumers) expect(consumer.dead_letter_queue, `${env}: ${consumer.queue}`).toMatch(/-dlq/);
			// Every queue the Worker sends to is consumed (and so dead-lettered), or is a dead-letter queue itself.
			const consumed = new Set(queues.consumers.map((c) => c.queue));
			for (const producer of queues.producers ?? [])
				expect(consumed.has(producer.queue) || dead.has(producer.queue), producer.queue).toBe(true);
		}
	});

	it("gives every environment its own Worker, database, queue and bucket names, and its own vars", () => {
		const namesOf = (env: string | undefined) => {
			const c = configOf(env);
			return [
				`worker:${c.name}`,
				...c.d1_databases.map((d) => `d1:${d.database_name}`),
				...c.queues.consumers.flatMap((q) => [`queue:${q.queue}`, `queue:${q.dead_letter_queue}`]),
				...(c.queues.producers ?? []).map((q) => `queue:${q.queue}`),
				...c.r2_buckets.map((b) => `r2:${b.bucket_name}`),
			];
		};
		const seen = new Map<string, string>();
		for (const env of ["local", ...ENVIRONMENTS]) {
			for (const name of new Set(namesOf(env === "local" ? undefined : env))) {
				expect(seen.get(name), `${name} in ${env} and ${seen.get(name)}`).toBeUndefined();
				seen.set(name, env);
			}
		}
		const localVars = Object.keys(configOf(undefined).vars).sort();
		for (const env of ENVIRONMENTS) expect(Object.keys(configOf(env).vars).sort(), env).toEqual(localVars);
	});

	it("binds each environment's pool of D1 shards: 4 locally and in the tests, 32 deployed, as SHARD_COUNT says (issue 50)", () => {
		for (const [env, count] of [
			[undefined, 4],
			["staging", 32],
			["production", 32],
		] as const) {
			const config = configOf(env);
			const layout = layoutOf(config, ROOT);
			expect(layout.problems, String(env)).toEqual([]);
			expect(layout.count, String(env)).toBe(count);
			expect(config.vars.SHARD_COUNT, String(env)).toBe(String(count));
			expect(layout.control?.dir).toBe(`${ROOT}migrations`);
			for (const shard of layout.shards) expect(shard.dir, `${env} ${shard.binding}`).toBe(`${ROOT}migrations-shard`);
			// Locally a database is kept per id: every shard its own.
			expect(new Set(config.d1_databases.map((d) => d.database_id)).size, String(env)).toBe(count + 1);
		}
		// What the migrate script refuses: a count that is not the bindings', a gap, a shard on the control schema.
		const local = configOf(undefined);
		expect(layoutOf({ ...local, vars: { ...local.vars, SHARD_COUNT: "5" } }, ROOT).problems).toEqual([
			'SHARD_COUNT is "5" but 4 SHARD_<n> bindings are bound',
		]);
		const gap = local.d1_databases.filter((d) => d.binding !== "SHARD_1");
		expect(layoutOf({ ...local, d1_databases: gap, vars: { ...local.vars, SHARD_COUNT: "3" } }, ROOT).problems).toContain(
			"SHARD_1 is missing: shard bindings must be SHARD_0 ... SHARD_2",
		);
		const controlSchema = local.d1_databases.map((d) => (d.binding === "SHARD_2" ? { ...d, migrations_dir: "migrations" } : d));
		expect(layoutOf({ ...local, d1_databases: controlSchema }, ROOT).problems).toEqual([
			"SHARD_2 takes the control database's migrations folder",
		]);
	});

	it("says nothing about deploying the top level", () => {
		expect(toml).not.toMatch(/For `wrangler deploy`, replace database_id/);
	});
});
