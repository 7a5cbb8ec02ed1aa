// `npm run deploy -- --env <staging|production> [--dry-run] [--allow-example-values]`
// (npm run deploy:staging / deploy:production): applies the environment's
// remote D1 migrations, then deploys the Worker to that environment. There is
// no deploy without an environment: the top level of wrangler.toml is the
// local configuration (docs/deploy.md), so a bare `npm run deploy` refuses
// before calling anything.
//
// Refused too, before anything runs: an environment whose D1 database_id is
// still the placeholder (run `npm run provision` first), and production with
// example values left in its section (`example.com` addresses), unless
// `--allow-example-values` says that is meant.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { environmentOf, exampleValuesOf, PLACEHOLDER_ID } from "./provision.mjs";

const USAGE = "usage: npm run deploy -- --env <staging|production> [--dry-run] [--allow-example-values]";

/**
 * The migration step, in one place: the deploy runs these commands before
 * `wrangler deploy`. A change of how the schema reaches the databases (one
 * database today; several when D1 is sharded) changes only this function.
 */
export function migrationCommands(env) {
	return [["wrangler", "d1", "migrations", "apply", "DB", "--remote", "--env", env]];
}

/** The whole deploy of one environment, in order. */
export function deployPlan(env) {
	return [...migrationCommands(env), ["wrangler", "deploy", "--env", env]];
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
	if (!resources.databaseId || resources.databaseId === PLACEHOLDER_ID) {
		return `[env.${env}] still has the placeholder D1 database_id: run \`npm run provision -- --env ${env}\` first (docs/deploy.md). Nothing was deployed.`;
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
		console.log(`$ npx ${command.join(" ")}`);
		if (argv.includes("--dry-run")) continue;
		const run = spawnSync("npx", command, { stdio: "inherit" });
		if (run.status !== 0) {
			console.error(`failed: npx ${command.join(" ")} (exit ${run.status}); the steps after it did not run.`);
			return run.status ?? 1;
		}
	}
	if (!argv.includes("--dry-run")) console.log(`Deployed --env ${env}. Smoke test: npm run smoke -- <the Worker's URL>`);
	return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
