// `npm run provision -- --env <staging|production> [--dry-run] [--set-secrets]`:
// checks that wrangler is signed in to an account (`wrangler whoami`), flags
// example values left in the environment's section of wrangler.toml, creates
// with wrangler what the environment needs and does not have yet (its D1
// databases: the control database and every shard of its pool; its queues and
// their dead-letter queues, its R2 bucket of logos), writes each new
// database's id into wrangler.toml, and prints the secrets still to set and
// the deploy command. `--set-secrets` also sets them: each from the variable
// of the same name in the environment (CI), else asked for at the terminal.
// `--dry-run` prints the same plan and calls nothing: no wrangler, no
// network (docs/deploy.md).
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline/promises";

export const PLACEHOLDER_ID = "00000000-0000-4000-8000-000000000000";
/**
 * Whether a database_id is one of wrangler.toml's placeholders: the control
 * database's PLACEHOLDER_ID, or a shard's (`00000000-0000-4000-8000-1000000000<n>`,
 * one per shard, since a local database is kept per id). No account has them.
 */
export function isPlaceholderId(id) {
	return !id || id.startsWith("00000000-0000-4000-8000-");
}
/** Secrets the Worker refuses to run without (README "Deploying", docs/deploy.md). */
export const SECRETS = [
	["ADMIN_TOKEN", "32+ random characters: the admin API and the dashboard answer 503 without it"],
	["IP_HASH_KEY", "another random value: keys the hashes of IP addresses"],
	["SECRETS_KEY", "another random value: seals the apps' Stripe keys at rest"],
];

/** The lines of wrangler.toml that belong to `[env.<name>]` and its sub-tables. */
export function environmentOf(toml, name) {
	const lines = toml.split("\n");
	const mine = [];
	let inside = false;
	for (const line of lines) {
		const header = /^\s*\[\[?([^\]]+)\]\]?\s*$/.exec(line);
		if (header) inside = header[1] === `env.${name}` || header[1].startsWith(`env.${name}.`);
		if (inside) mine.push(line);
	}
	if (mine.length === 0) return null;
	const values = (key) => [...mine.join("\n").matchAll(new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`, "gm"))].map((m) => m[1]);
	const queues = [...new Set([...values("queue"), ...values("dead_letter_queue")])];
	// Every D1 database of the section, in order: the control database DB, then the shards (SHARD_0 ...).
	const databases = mine
		.join("\n")
		.split(/^\s*\[\[[^\]]*d1_databases\]\]\s*$/m)
		.slice(1)
		.map((section) => {
			const block = section.split(/^\s*\[/m)[0];
			const field = (key) => new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`, "m").exec(block)?.[1] ?? null;
			return { binding: field("binding"), name: field("database_name"), id: field("database_id") };
		});
	const dlqs = new Set(values("dead_letter_queue"));
	return {
		database: values("database_name")[0] ?? null,
		databaseId: values("database_id")[0] ?? null,
		queues: queues.filter((q) => !dlqs.has(q)),
		deadLetterQueues: [...dlqs],
		buckets: values("bucket_name"),
		databases,
	};
}

/**
 * The values of `[env.<name>]` that are still the repository's examples
 * (an `example.com`/`.org`/`.net` address or host): `KEY = "value"` each.
 * Deployed as they are, emails would go out from a sender nobody owns.
 */
export function exampleValuesOf(toml, name) {
	const found = [];
	let inside = false;
	for (const line of toml.split("\n")) {
		const header = /^\s*\[\[?([^\]]+)\]\]?\s*$/.exec(line);
		if (header) inside = header[1] === `env.${name}` || header[1].startsWith(`env.${name}.`);
		const value = /^\s*(\w+)\s*=\s*"([^"]*)"/.exec(line);
		if (inside && value && /(^|[@./])example\.(com|org|net)\b/i.test(value[2])) found.push(`${value[1]} = "${value[2]}"`);
	}
	return found;
}

/** What to create, in order, and the commands that would do it. */
export function planOf(env, resources) {
	const steps = [];
	// The control database, then every shard of the pool (issue 50): each created only if missing.
	for (const database of resources.databases ?? []) {
		if (!database.name) continue;
		const known = !isPlaceholderId(database.id);
		steps.push({
			kind: "d1",
			name: database.name,
			binding: database.binding,
			known,
			command: ["wrangler", "d1", "create", database.name],
			note: `${database.binding}: ${known ? `database_id ${database.id} already in wrangler.toml: checked, created only if missing` : "then its id goes into wrangler.toml"}`,
		});
	}
	for (const queue of [...resources.queues, ...resources.deadLetterQueues]) {
		const dead = resources.deadLetterQueues.includes(queue);
		steps.push({ kind: "queue", name: queue, command: ["wrangler", "queues", "create", queue], note: dead ? "dead-letter queue" : "" });
	}
	// The R2 bucket of the apps' uploaded logos (docs/deploy.md).
	for (const bucket of resources.buckets ?? []) {
		steps.push({ kind: "r2", name: bucket, command: ["wrangler", "r2", "bucket", "create", bucket], note: "uploaded logos" });
	}
	return {
		steps,
		secrets: SECRETS.map(([name, why]) => ({ name, why, command: `npx wrangler secret put ${name} --env ${env}` })),
		migrate: `npm run migrate -- --env ${env} --remote`,
		deploy: `npm run deploy:${env}`,
	};
}

function printPlan(env, plan, dryRun) {
	console.log(`${dryRun ? "Plan (dry run: nothing is called)" : "Provisioning"} for --env ${env}:`);
	for (const step of plan.steps) {
		console.log(
			`  ${{ d1: "D1 database", queue: "queue      ", r2: "R2 bucket  " }[step.kind]} ${step.name.padEnd(34)} npx ${step.command.join(" ")}${step.note ? `  # ${step.note}` : ""}`,
		);
	}
}

function wrangler(args) {
	const run = spawnSync("npx", ["wrangler", ...args], { encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
	return { ok: run.status === 0, out: `${run.stdout ?? ""}${run.stderr ?? ""}` };
}

const alreadyExists = (out) => /already (exists|taken)|name is taken|\[code: 11009\]|\[code: 7502\]/i.test(out);

function main(argv) {
	const envAt = argv.indexOf("--env");
	const env = envAt >= 0 ? argv[envAt + 1] : undefined;
	const dryRun = argv.includes("--dry-run");
	const tomlPath = new URL("../wrangler.toml", import.meta.url);
	const toml = readFileSync(tomlPath, "utf8");
	const resources = env ? environmentOf(toml, env) : null;
	if (!env || !resources) {
		console.error("usage: npm run provision -- --env <staging|production> [--dry-run] [--set-secrets]  (an [env.<name>] of wrangler.toml)");
		return 2;
	}
	const plan = planOf(env, resources);
	printPlan(env, plan, dryRun);
	const examples = exampleValuesOf(toml, env);
	if (examples.length > 0) {
		console.log(`\nExample values left in [env.${env}] of wrangler.toml (set real ones before deploying; docs/deploy.md):`);
		for (const example of examples) console.log(`  ${example}`);
		console.log("");
	}
	if (dryRun) console.log("Account check: npx wrangler whoami (not called in a dry run)");
	else {
		// The account first: creating resources while signed out, or in another account, fails half way.
		const who = wrangler(["whoami"]);
		if (!who.ok || /not authenticated|not logged in/i.test(who.out)) {
			console.error(`wrangler is not signed in: run \`npx wrangler login\` (or set CLOUDFLARE_API_TOKEN), then again.\n${who.out}`);
			return 1;
		}
		// Its table names the account(s); with several, wrangler asks which (or CLOUDFLARE_ACCOUNT_ID says it).
		console.log(`Account check: signed in.\n${who.out.trim()}`);
	}
	if (!dryRun) {
		for (const step of plan.steps) {
			const result = wrangler(step.command.slice(1));
			if (result.ok) {
				console.log(`  created ${step.name}`);
				if (step.kind === "d1") {
					const id =
						/database_id\s*=\s*"([0-9a-f-]{36})"/.exec(result.out)?.[1] ?? /"database_id":\s*"([0-9a-f-]{36})"/.exec(result.out)?.[1];
					if (!id) throw new Error(`could not read the new database's id from:\n${result.out}`);
					writeDatabaseId(tomlPath, env, step.name, id);
					console.log(`  wrote database_id ${id} of ${step.name} into [env.${env}] of wrangler.toml`);
				}
			} else if (alreadyExists(result.out)) {
				console.log(`  ${step.name} exists already`);
				if (step.kind === "d1" && !step.known) {
					const info = wrangler(["d1", "info", step.name, "--json"]);
					const id = /"uuid":\s*"([0-9a-f-]{36})"/.exec(info.out)?.[1];
					if (id) writeDatabaseId(tomlPath, env, step.name, id);
					console.log(
						id ? `  wrote its database_id ${id} into wrangler.toml` : "  put its database_id into wrangler.toml by hand (wrangler d1 info)",
					);
				}
			} else {
				console.error(`  failed: npx ${step.command.join(" ")}\n${result.out}`);
				return 1;
			}
		}
	}
	if (argv.includes("--set-secrets")) return setSecrets(env, plan, dryRun).then((code) => (code === 0 ? finish(plan) : code));
	console.log(`\nSecrets to set (each asks for its value; skip those already set: npx wrangler secret list --env ${env}),`);
	console.log("or run again with --set-secrets (each from the variable of its name, else asked for):");
	for (const secret of plan.secrets) console.log(`  ${secret.command.padEnd(52)} # ${secret.why}`);
	return finish(plan);
}

function finish(plan) {
	console.log(`\nThen: ${plan.deploy}   (${plan.migrate}: the remote D1 migrations of the control database and every shard, then deploys)`);
	console.log("Before a first production deploy, go through docs/deploy.md's checklist.");
	return 0;
}

/**
 * `--set-secrets`: each secret from the process environment (a CI job's
 * secrets), else asked for at the terminal; piped to `wrangler secret put`
 * so no value appears in a command line or a log. A dry run says where each
 * would come from and sets nothing.
 */
async function setSecrets(env, plan, dryRun) {
	console.log(`\nSecrets${dryRun ? " (dry run: none is set)" : ""}:`);
	const ask = process.stdin.isTTY && !dryRun ? createInterface({ input: process.stdin, output: process.stdout }) : null;
	try {
		for (const secret of plan.secrets) {
			const fromEnv = process.env[secret.name];
			if (dryRun) {
				console.log(`  ${secret.name.padEnd(12)} ${fromEnv ? `from $${secret.name}` : "would be asked for"}  # ${secret.why}`);
				continue;
			}
			let value = fromEnv;
			if (!value && ask) value = (await ask.question(`  ${secret.name} (${secret.why}; empty skips): `)).trim();
			if (!value) {
				console.log(`  ${secret.name}: skipped (no $${secret.name}, nothing typed); set it with ${secret.command}`);
				continue;
			}
			if (value.length < 32) {
				console.error(`  ${secret.name}: refused, under 32 characters (openssl rand -base64 32 makes one)`);
				return 1;
			}
			const put = spawnSync("npx", ["wrangler", "secret", "put", secret.name, "--env", env], { input: value, encoding: "utf8" });
			if (put.status !== 0) {
				console.error(`  ${secret.name}: wrangler secret put failed\n${put.stdout ?? ""}${put.stderr ?? ""}`);
				return 1;
			}
			console.log(`  ${secret.name}: set${fromEnv ? ` from $${secret.name}` : ""}`);
		}
		return 0;
	} finally {
		ask?.close();
	}
}

/** Replaces the database_id of the `[env.<env>]` D1 binding named `name` (and only that one). */
export function withDatabaseId(toml, env, name, id) {
	const header = `[[env.${env}.d1_databases]]`;
	for (let at = toml.indexOf(header); at >= 0; at = toml.indexOf(header, at + header.length)) {
		const next = toml.indexOf("\n[", at + header.length);
		const end = next < 0 ? toml.length : next;
		const section = toml.slice(at, end);
		if (!new RegExp(`^\\s*database_name\\s*=\\s*"${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`, "m").test(section)) continue;
		return toml.slice(0, at) + section.replace(/database_id\s*=\s*"[^"]*"/, `database_id = "${id}"`) + toml.slice(end);
	}
	throw new Error(`no ${header} with database_name = "${name}" in wrangler.toml`);
}

function writeDatabaseId(tomlPath, env, name, id) {
	writeFileSync(tomlPath, withDatabaseId(readFileSync(tomlPath, "utf8"), env, name, id));
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main(process.argv.slice(2));
