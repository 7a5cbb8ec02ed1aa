// `npm run deploy -- --env <staging|production> [--dry-run] [--allow-example-values]`
// (npm run deploy:staging / deploy:production): applies the environment's
// remote D1 migrations to the control database and every shard
// (scripts/migrate.mjs, which fails if any database stays behind the code),
// then deploys the Worker to that environment. There is
// no deploy without an environment: the top level of wrangler.toml is the
// local configuration (docs/deploy.md), so a bare `npm run deploy` refuses
// before calling anything.
//
// Refused too, before anything runs: an environment with a D1 database_id
// still a placeholder, the control database's or a shard's (run
// `npm run provision` first), and production with
// example values left in its section (`example.com` addresses), unless
// `--allow-example-values` says that is meant.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { environmentOf, exampleValuesOf, isPlaceholderId } from "./provision.mjs";

const USAGE = "usage: npm run deploy -- --env <staging|production> [--dry-run] [--allow-example-values]";

/**
 * The migration step, in one place: the deploy runs these commands before
 * `wrangler deploy`. Since issue 50 it is `npm run migrate`'s script: the
 * control database and every shard, each database's version read back, and
 * a failure (a database behind the code, a shard count that differs from the
 * recorded one) stops the deploy before the code goes out. Each command is
 * its program and arguments; `node` is this node.
 */
export function migrationCommands(env) {
	return [["node", "scripts/migrate.mjs", "--env", env, "--remote"]];
}

/** The whole deploy of one environment, in order. */
export function deployPlan(env) {
	return [...migrationCommands(env), ["npx", "wrangler", "deploy", "--env", env]];
}

/** Why `argv` may not deploy (a message), or null. Pure: reads only the given wrangler.toml text. */
export function refusal(argv, toml) {
	const at = argv.indexOf("--env");
	const env = at >= 0 ? argv[at + 1] : undefined;
	if (!env || env.startsWith("--")) {
		return `${USAGE}\nNo environment given: nothing was deployed. The top level of wrangler.toml is for local development only (docs/deploy.md).`;
	}
	const resources = environmentOf(toml, env);
	if (!resources) return `${USAGE}\nwrangler.toml has no [env.${env}]: nothing was deployed.`;
	const unprovisioned = resources.databases.filter((d) => isPlaceholderId(d.id)).map((d) => d.binding);
	if (resources.databases.length === 0 || unprovisioned.length > 0) {
		return `[env.${env}] still has the placeholder D1 database_id (${unprovisioned.length > 4 ? `${unprovisioned.slice(0, 3).join(", ")} and ${unprovisioned.length - 3} more` : unprovisioned.join(", ") || "no D1 database"}): run \`npm run provision -- --env ${env}\` first (docs/deploy.md). Nothing was deployed.`;
	}
	const examples = exampleValuesOf(toml, env);
	if (env === "production" && examples.length > 0 && !argv.includes("--allow-example-values")) {
		return `[env.production] still has example values:\n${examples.map((e) => `  ${e}`).join("\n")}\nSet real ones (docs/deploy.md, checklist), or pass --allow-example-values. Nothing was deployed.`;
	}
	return null;
}

function main(argv) {
	const toml = readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8");
	const refused = refusal(argv, toml);
	if (refused) {
		console.error(refused);
		return 2;
	}
	const env = argv[argv.indexOf("--env") + 1];
	for (const example of exampleValuesOf(toml, env)) console.warn(`warning: example value left in [env.${env}]: ${example}`);
	for (const command of deployPlan(env)) {
		console.log(`$ ${command.join(" ")}`);
		if (argv.includes("--dry-run")) continue;
		const [program, ...args] = command;
		const cwd = new URL("..", import.meta.url).pathname;
		const run = spawnSync(program === "node" ? process.execPath : program, args, { stdio: "inherit", cwd });
		if (run.status !== 0) {
			console.error(`failed: ${command.join(" ")} (exit ${run.status}); the steps after it did not run.`);
			return run.status ?? 1;
		}
	}
	if (!argv.includes("--dry-run")) console.log(`Deployed --env ${env}. Smoke test: npm run smoke -- <the Worker's URL>`);
	return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
