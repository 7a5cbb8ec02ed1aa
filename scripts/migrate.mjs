// `npm run migrate -- [--env <name>] [--local | --remote] [--check] [--persist-to <dir>] [--config <path>]`:
// the D1 schema of every database of an environment in one command (issue 50,
// docs/deploy.md "Migrations"). wrangler migrates one database per command
// (cloudflare/workers-sdk#4471, open since 2023), so this loops over them:
//
// 1. the control database (binding DB, migrations/);
// 2. its shard directory (`shard_directory`): the shard count and hash are
//    recorded on the first run, and a wrangler.toml whose SHARD_<n> bindings
//    or SHARD_COUNT differ from the record is refused before any shard is
//    touched (a new count would send every key to another shard);
// 3. every shard SHARD_0 ... SHARD_<count - 1> (migrations-shard/), in order,
//    each then writing its identity (`shard_identity`: which shard of how
//    many), and refusing a database that says it is another shard.
//
// Each database records its own version: wrangler's `d1_migrations` table
// names every migration applied to it, one transaction per migration. A run
// stops at the first database that fails and says so; run it again once the
// cause is fixed and it resumes: what a database applied is skipped. At the
// end (and alone with `--check`, which writes nothing) every database's
// applied migrations are compared with the files of its folder, the code's
// expected version: a database behind the code fails the run, so
// `npm run deploy` (which runs this first) never deploys code ahead of a shard.
// Without --env: the local top level of wrangler.toml. Default --local.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** The hash shardFor routes by: src/domain/shard.ts SHARD_HASH (test/e2e/migrate.e2e.test.ts keeps them equal). */
export const SHARD_HASH = "fnv1a32-fmix32";
const ROOT = new URL("..", import.meta.url).pathname;
const USAGE = "usage: npm run migrate -- [--env <name>] [--local | --remote] [--check] [--persist-to <dir>] [--config <path>]";

/**
 * The databases of one environment's resolved wrangler config: the control
 * database and the shards in order, with what is wrong with them (a missing
 * or extra SHARD_<n>, a count that is not SHARD_COUNT, a shared name).
 * @param {{ d1_databases: { binding: string, database_name?: string, database_id?: string, migrations_dir?: string }[], vars?: Record<string, unknown> }} config
 * @param {string} configDir the folder migrations_dir is relative to
 */
export function layoutOf(config, configDir) {
	const problems = [];
	const byBinding = new Map(config.d1_databases.map((d) => [d.binding, d]));
	const database = (d, fallback) => ({
		binding: d.binding,
		name: d.database_name ?? d.binding,
		id: d.database_id ?? "",
		dir: resolve(configDir, d.migrations_dir ?? fallback),
	});
	const control = byBinding.get("DB");
	if (!control) problems.push("no D1 binding DB (the control database)");
	const shardBindings = config.d1_databases.map((d) => d.binding).filter((b) => /^SHARD_\d+$/.test(b));
	const count = shardBindings.length;
	const shards = [];
	for (let i = 0; i < count; i++) {
		const d = byBinding.get(`SHARD_${i}`);
		if (!d) problems.push(`SHARD_${i} is missing: shard bindings must be SHARD_0 ... SHARD_${count - 1}`);
		else shards.push(database(d, "migrations-shard"));
	}
	const declared = Number(config.vars?.SHARD_COUNT);
	if (count === 0) problems.push("no SHARD_<n> D1 bindings");
	if (String(config.vars?.SHARD_COUNT ?? "") === "" || declared !== count)
		problems.push(`SHARD_COUNT is ${JSON.stringify(config.vars?.SHARD_COUNT ?? null)} but ${count} SHARD_<n> bindings are bound`);
	const names = new Map();
	for (const d of config.d1_databases) {
		const name = d.database_name ?? d.binding;
		if (names.has(name)) problems.push(`${d.binding} and ${names.get(name)} share the database ${name}`);
		names.set(name, d.binding);
	}
	for (const shard of shards)
		if (control && shard.dir === resolve(configDir, control.migrations_dir ?? "migrations"))
			problems.push(`${shard.binding} takes the control database's migrations folder`);
	return { control: control ? database(control, "migrations") : null, shards, count, problems };
}

/** The code's expected version of a database: the .sql files of its folder, in the order wrangler applies them. */
export function expectedMigrations(dir) {
	return readdirSync(dir)
		.filter((f) => f.endsWith(".sql"))
		.sort();
}

/** The migrations of `expected` a database has not applied (empty: at the code's version or past it). */
export function missingMigrations(applied, expected) {
	const done = new Set(applied);
	return expected.filter((name) => !done.has(name));
}

/** Why a recorded directory or identity refuses this layout (a message), or null. */
export function directoryRefusal(recorded, count) {
	if (!recorded) return null;
	if (recorded.shard_count !== count || recorded.hash !== SHARD_HASH)
		return `the control database records ${recorded.shard_count} shards by ${recorded.hash}; this configuration has ${count} by ${SHARD_HASH}. A new count or hash would send every key to another shard: it needs a resharding copy (docs/scaling.md), not a deploy.`;
	return null;
}

export function identityRefusal(recorded, shard, count) {
	if (!recorded) return null;
	if (recorded.shard !== shard || recorded.shard_count !== count || recorded.hash !== SHARD_HASH)
		return `this database says it is shard ${recorded.shard} of ${recorded.shard_count} (${recorded.hash}), but is bound as SHARD_${shard} of ${count} (${SHARD_HASH}): a binding points at another shard's database.`;
	return null;
}

// wrangler's own bin (its package exports no path to it): run with this node, not through npx, for speed.
const WRANGLER = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");

/** Runs wrangler with `args` (the target flags appended); its status and output. */
function wrangler(args, target) {
	const run = spawnSync(process.execPath, [WRANGLER, ...args, ...target], {
		cwd: ROOT,
		encoding: "utf8",
		env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
		maxBuffer: 64 * 1024 * 1024,
	});
	return { ok: run.status === 0, stdout: run.stdout ?? "", out: `${run.stdout ?? ""}${run.stderr ?? ""}` };
}

/** Runs SQL statements on one database; the rows of each, or null when wrangler failed (e.g. a table not there yet). */
function query(binding, sql, target) {
	const run = wrangler(["d1", "execute", binding, "--json", "--command", sql], target);
	if (!run.ok) return null;
	try {
		return JSON.parse(run.stdout.slice(run.stdout.search(/[[{]/))).map((r) => r.results ?? []);
	} catch {
		return null;
	}
}

/** Migration names for a message: all of a few, the count and the ends of many. */
const listed = (names) => (names.length > 3 ? `${names.length} migrations, ${names[0]} ... ${names.at(-1)}` : names.join(", "));
const q = (text) => `'${String(text).replaceAll("'", "''")}'`;
const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** The control database, then each shard: migrated (unless checking) and read back. */
function migrate(layout, target, check, log) {
	const states = [];
	/** A database's applied migrations and its record (directory or identity; null when none or not there yet). */
	const read = (db, recordSql) => {
		const rows = query(db.binding, `SELECT name FROM d1_migrations ORDER BY id; ${recordSql}`, target);
		if (rows) return { applied: rows[0].map((r) => r.name), record: rows.at(-1)?.[0] ?? null };
		// The record's table is not there yet (a database before its first migrations), or none is.
		const applied = query(db.binding, "SELECT name FROM d1_migrations ORDER BY id", target);
		return { applied: applied ? applied[0].map((r) => r.name) : [], record: null };
	};
	/** Applies what `before` lacks; whether that worked. */
	const apply = (db, before) => {
		const missing = missingMigrations(before.applied, expectedMigrations(db.dir));
		if (missing.length === 0) return true;
		log(`  ${db.binding.padEnd(9)} ${db.name}: applying ${listed(missing)}`);
		const run = wrangler(["d1", "migrations", "apply", db.binding], target);
		if (!run.ok) log(run.out.trim().split("\n").slice(-12).join("\n"));
		return run.ok;
	};
	/** Reads back after applying (writing the record if it was not there), or keeps `before` when nothing changed. */
	const settle = (db, before, recordSql, insertSql) =>
		missingMigrations(before.applied, expectedMigrations(db.dir)).length === 0 && before.record
			? before
			: read(db, before.record ? recordSql : `${insertSql}; ${recordSql}`);
	const stop = (db, why) => ({ failed: `${db.binding} (${db.name}): ${why}`, states });

	const control = layout.control;
	const directorySql = "SELECT shard_count, hash FROM shard_directory WHERE id = 1";
	const identitySql = "SELECT shard, shard_count, hash FROM shard_identity WHERE id = 1";
	// Every database read first: a recorded directory that differs, or a database that is another shard, refuses
	// before anything is applied anywhere.
	const controlBefore = read(control, directorySql);
	const refusedDirectory = directoryRefusal(controlBefore.record, layout.count);
	if (refusedDirectory) return { refused: `${control.binding} (${control.name}): ${refusedDirectory}`, states };
	const shardsBefore = [];
	for (const [shard, db] of layout.shards.entries()) {
		const before = read(db, identitySql);
		const refused = identityRefusal(before.record, shard, layout.count);
		if (refused) return { refused: `${db.binding} (${db.name}): ${refused}`, states };
		shardsBefore.push(before);
	}
	if (check) {
		states.push({ db: control, applied: controlBefore.applied });
		for (const [shard, db] of layout.shards.entries()) states.push({ db, applied: shardsBefore[shard].applied });
		return { states };
	}

	if (!apply(control, controlBefore)) return stop(control, "its migrations failed");
	const directoryInsert = `INSERT OR IGNORE INTO shard_directory (id, shard_count, hash, recorded_at) VALUES (1, ${layout.count}, ${q(SHARD_HASH)}, ${NOW})`;
	const record = settle(control, controlBefore, directorySql, directoryInsert);
	const refusedAfter = record.record ? directoryRefusal(record.record, layout.count) : "its shard directory could not be written";
	if (refusedAfter) return { refused: `${control.binding} (${control.name}): ${refusedAfter}`, states };
	states.push({ db: control, applied: record.applied });

	for (const [shard, db] of layout.shards.entries()) {
		const before = shardsBefore[shard];
		if (!apply(db, before)) return stop(db, "its migrations failed");
		const insert = `INSERT OR IGNORE INTO shard_identity (id, shard, shard_count, hash, recorded_at) VALUES (1, ${shard}, ${layout.count}, ${q(SHARD_HASH)}, ${NOW})`;
		const after = settle(db, before, identitySql, insert);
		const refused = after.record ? identityRefusal(after.record, shard, layout.count) : "its identity could not be written";
		if (refused) return { refused: `${db.binding} (${db.name}): ${refused}`, states };
		states.push({ db, applied: after.applied });
	}
	return { states };
}

/** The version table and the databases behind the code (the deploy's guard). */
function versions(states, log) {
	const behind = [];
	for (const { db, applied } of states) {
		const expected = expectedMigrations(db.dir);
		const missing = missingMigrations(applied, expected);
		const at = applied.at(-1) ?? "(none)";
		log(
			`  ${db.binding.padEnd(9)} ${db.name.padEnd(34)} at ${at.padEnd(36)} ${missing.length ? `BEHIND: lacks ${listed(missing)}` : "ok"}`,
		);
		if (missing.length) behind.push(`${db.binding} (${db.name}) lacks ${listed(missing)}`);
	}
	return behind;
}

export async function main(argv, log = console.log, error = console.error) {
	const value = (flag) => {
		const at = argv.indexOf(flag);
		return at >= 0 && argv[at + 1] && !argv[at + 1].startsWith("--") ? argv[at + 1] : undefined;
	};
	const env = value("--env");
	if (argv.includes("--env") && !env) {
		error(USAGE);
		return 2;
	}
	const remote = argv.includes("--remote");
	if (remote && argv.includes("--local")) {
		error(`${USAGE}\n--local and --remote together`);
		return 2;
	}
	const configPath = value("--config") ?? join(ROOT, "wrangler.toml");
	const persistTo = value("--persist-to");
	const check = argv.includes("--check");
	const { unstable_readConfig } = await import("wrangler");
	const config = unstable_readConfig({ config: configPath, env }, { hideWarnings: true });
	const layout = layoutOf(config, dirname(isAbsolute(configPath) ? configPath : resolve(configPath)));
	if (layout.problems.length > 0) {
		error(
			`${env ? `[env.${env}]` : "The top level"} of ${configPath} cannot be migrated:\n${layout.problems.map((p) => `  ${p}`).join("\n")}`,
		);
		return 2;
	}
	const target = [remote ? "--remote" : "--local", "--config", configPath];
	if (env) target.push("--env", env);
	if (persistTo && !remote) target.push("--persist-to", persistTo);
	log(
		`${check ? "Checking" : "Migrating"} ${1 + layout.count} D1 databases (${remote ? "remote" : "local"}${env ? `, --env ${env}` : ""}): DB and ${layout.count} shards by ${SHARD_HASH}`,
	);
	const result = migrate(layout, target, check, log);
	const behind = versions(result.states, log);
	if (result.refused) {
		error(`Refused: ${result.refused}\nNothing further was migrated.`);
		return 2;
	}
	if (result.failed) {
		error(
			`Failed: ${result.failed}. The databases before it are migrated; run the same command again once the cause is fixed: it resumes where this stopped.`,
		);
		return 1;
	}
	const notReached = result.states.length < 1 + layout.count;
	if (behind.length > 0 || notReached) {
		error(
			`Behind the code: ${behind.join("; ")}. ${check ? "Run `npm run migrate` for this environment first: code" : "Code"} ahead of a database's schema is not deployed.`,
		);
		return 1;
	}
	log(`${check ? "Every" : "Migrated: every"} database is at the code's version.`);
	return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main(process.argv.slice(2));
