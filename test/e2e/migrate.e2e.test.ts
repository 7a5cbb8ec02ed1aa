import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratedState } from "../../scripts/dev-service.mjs";
import { SHARD_HASH as SCRIPT_HASH } from "../../scripts/migrate.mjs";
import { SHARD_HASH } from "../../src/domain/shard";

/** The newest file of migrations-shard/: the version every shard must be at. */
const LAST_SHARD_MIGRATION =
	readdirSync(new URL("../../migrations-shard/", import.meta.url))
		.filter((f) => f.endsWith(".sql"))
		.sort()
		.at(-1) ?? "";

// `npm run migrate` (scripts/migrate.mjs, issue 50): the control database and
// every shard in one command, on real local D1 databases through wrangler.
// A shard fails half way for a real reason (a table already there), the run
// stops and says so, and the same command resumes once the cause is gone;
// code ahead of a shard is refused; so is a shard count that differs from the
// recorded one, and a binding that points at another shard's database.
const ROOT = new URL("../..", import.meta.url).pathname;
const SCRIPT = join(ROOT, "scripts/migrate.mjs");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const CHILD_ENV = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };

function migrate(args: string[]) {
	const run = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: "utf8", env: CHILD_ENV, timeout: 240_000 });
	return { status: run.status, stdout: run.stdout, stderr: run.stderr, out: `${run.stdout}${run.stderr}` };
}

describe("npm run migrate on the repository's configuration (4 local shards)", () => {
	it("leaves the control database and each of the 4 shards at the code's version, with the directory and identities", () => {
		expect(SCRIPT_HASH).toBe(SHARD_HASH);
		// The e2e services' state is made by this command (scripts/dev-service.mjs migratedState).
		const state = migratedState(CHILD_ENV);
		const check = migrate(["--local", "--check", "--persist-to", state]);
		expect(check.status, check.out).toBe(0);
		expect(check.stdout).toMatch(/DB +referral-rewards-local +at 00\d\d_\w+\.sql +ok/);
		for (let i = 0; i < 4; i++)
			expect(check.stdout).toMatch(
				new RegExp(`SHARD_${i} +referral-rewards-local-shard-${i} +at ${LAST_SHARD_MIGRATION.replace(".", "\\.")} +ok`),
			);
		expect(check.stdout).toContain("Every database is at the code's version.");
		const query = (binding: string, sql: string) => {
			const run = spawnSync(
				process.execPath,
				[WRANGLER, "d1", "execute", binding, "--local", "--persist-to", state, "--json", "--command", sql],
				{
					cwd: ROOT,
					encoding: "utf8",
					env: CHILD_ENV,
				},
			);
			expect(run.status, run.stderr).toBe(0);
			return JSON.parse(run.stdout)[0].results;
		};
		expect(query("DB", "SELECT shard_count, hash FROM shard_directory")).toEqual([{ shard_count: 4, hash: SHARD_HASH }]);
		expect(query("SHARD_3", "SELECT shard, shard_count, hash FROM shard_identity")).toEqual([
			{ shard: 3, shard_count: 4, hash: SHARD_HASH },
		]);
		expect(query("SHARD_3", "SELECT name FROM sqlite_master WHERE name = 'users'")).toEqual([]);
	}, 300_000);
});

describe("npm run migrate: failure half way, resume, code ahead, a changed count", () => {
	let dir: string;
	let config: string;
	let persist: string;
	const run = (...args: string[]) => migrate(["--local", "--config", config, "--persist-to", persist, ...args]);
	const tomlWith = (shardIds: string[]) =>
		[
			'name = "migrate-test"',
			'main = "worker.js"',
			'compatibility_date = "2026-11-01"',
			"[vars]",
			`SHARD_COUNT = "${shardIds.length}"`,
			"[[d1_databases]]",
			'binding = "DB"',
			'database_name = "migrate-test-control"',
			'database_id = "00000000-0000-4000-8000-000000000000"',
			'migrations_dir = "control"',
			...shardIds.flatMap((id, i) => [
				"[[d1_databases]]",
				`binding = "SHARD_${i}"`,
				`database_name = "migrate-test-shard-${i}"`,
				`database_id = "${id}"`,
				'migrations_dir = "shard"',
			]),
		].join("\n");
	const ids = [0, 1, 2, 3].map((i) => `00000000-0000-4000-8000-10000000000${i}`);
	/** Rows of one statement on one database of the test's config, or null when wrangler fails (e.g. no such table). */
	const query = (binding: string, sql: string, configPath = config) => {
		const out = spawnSync(
			process.execPath,
			[WRANGLER, "d1", "execute", binding, "--local", "--config", configPath, "--persist-to", persist, "--json", "--command", sql],
			{ cwd: dir, encoding: "utf8", env: CHILD_ENV },
		);
		return out.status === 0 ? (JSON.parse(out.stdout)[0].results as Record<string, unknown>[]) : null;
	};
	const applied = (binding: string) => query(binding, "SELECT name, applied_at FROM d1_migrations ORDER BY id");

	beforeAll(() => {
		dir = mkdtempSync(join(tmpdir(), "migrate-test-"));
		persist = join(dir, "state");
		config = join(dir, "wrangler.toml");
		mkdirSync(join(dir, "control"));
		mkdirSync(join(dir, "shard"));
		writeFileSync(join(dir, "worker.js"), "export default {};\n");
		writeFileSync(config, tomlWith(ids));
		// The real directory and identity schemas, and a second shard migration of the kind phase 2 adds.
		copyFileSync(join(ROOT, "migrations/0045_i50_shard_directory.sql"), join(dir, "control/0001_shard_directory.sql"));
		copyFileSync(join(ROOT, "migrations-shard/0001_shard_identity.sql"), join(dir, "shard/0001_shard_identity.sql"));
		writeFileSync(join(dir, "shard/0002_claims.sql"), "CREATE TABLE claims (claim TEXT PRIMARY KEY, owner TEXT NOT NULL);\n");
	});

	afterAll(() => rmSync(dir, { recursive: true, force: true }));

	it("stops at a shard that fails half way, naming it; the same command resumes and touches nothing done", () => {
		// Shard 2 already has a table of that name: its second migration fails there, for real.
		expect(query("SHARD_2", "CREATE TABLE claims (something_else TEXT)")).toEqual([]);
		const failed = run();
		expect(failed.status, failed.out).toBe(1);
		expect(failed.stderr).toMatch(/Failed: SHARD_2 \(migrate-test-shard-2\): its migrations failed\. .*run the same command again/);
		expect(failed.stdout).toMatch(/table claims already exists/);
		expect(applied("SHARD_0")?.map((r) => r.name)).toEqual(["0001_shard_identity.sql", "0002_claims.sql"]);
		expect(applied("SHARD_1")?.map((r) => r.name)).toEqual(["0001_shard_identity.sql", "0002_claims.sql"]);
		expect(applied("SHARD_2")?.map((r) => r.name)).toEqual(["0001_shard_identity.sql"]); // half way
		expect(applied("SHARD_3")).toBeNull(); // not reached
		expect(query("DB", "SELECT shard_count, hash FROM shard_directory")).toEqual([{ shard_count: 4, hash: SHARD_HASH }]);

		// The deploy's guard: code ahead of shards 2 and 3 is refused.
		const check = run("--check");
		expect(check.status, check.out).toBe(1);
		expect(check.stderr).toMatch(
			/Behind the code: SHARD_2 \(migrate-test-shard-2\) lacks 0002_claims\.sql; SHARD_3 \(migrate-test-shard-3\) lacks 0001_shard_identity\.sql, 0002_claims\.sql/,
		);

		const before = applied("SHARD_0");
		expect(query("SHARD_2", "DROP TABLE claims")).toEqual([]); // the cause, fixed
		const resumed = run();
		expect(resumed.status, resumed.out).toBe(0);
		expect([...resumed.stdout.matchAll(/^ {2}(\w+) .*: applying (.*)$/gm)].map((m) => `${m[1]}: ${m[2]}`)).toEqual([
			"SHARD_2: 0002_claims.sql",
			"SHARD_3: 0001_shard_identity.sql, 0002_claims.sql",
		]);
		expect(applied("SHARD_0")).toEqual(before);
		for (const shard of [0, 1, 2, 3]) {
			expect(applied(`SHARD_${shard}`)?.map((r) => r.name)).toEqual(["0001_shard_identity.sql", "0002_claims.sql"]);
			expect(query(`SHARD_${shard}`, "SELECT shard, shard_count, hash FROM shard_identity")).toEqual([
				{ shard, shard_count: 4, hash: SHARD_HASH },
			]);
		}
		expect(run("--check").status).toBe(0);
	}, 600_000);

	it("refuses code ahead of a shard: a new shard migration that one shard cannot take fails the run and the check", () => {
		writeFileSync(join(dir, "shard/0003_claims_owner.sql"), "CREATE INDEX claims_owner ON claims(owner);\n");
		expect(query("SHARD_1", "CREATE INDEX claims_owner ON claims(claim)")).toEqual([]);
		const failed = run();
		expect(failed.status, failed.out).toBe(1);
		expect(failed.stderr).toMatch(/Failed: SHARD_1 \(migrate-test-shard-1\)/);
		const check = run("--check");
		expect(check.status).toBe(1);
		expect(check.stderr).toMatch(
			/SHARD_1 \(migrate-test-shard-1\) lacks 0003_claims_owner\.sql; SHARD_2 .* lacks 0003_claims_owner\.sql; SHARD_3 .*lacks 0003_claims_owner\.sql\. .*code ahead of a database's schema is not deployed/i,
		);
		expect(check.stdout).toMatch(/SHARD_0 +migrate-test-shard-0 +at 0003_claims_owner\.sql +ok/);
		rmSync(join(dir, "shard/0003_claims_owner.sql"));
	}, 600_000);

	it("refuses a shard count that differs from the recorded one, and a binding that points at another shard, before migrating anything", () => {
		writeFileSync(join(dir, "control/0002_more.sql"), "CREATE TABLE more (x INTEGER);\n");
		const two = join(dir, "two.toml");
		writeFileSync(two, tomlWith(ids.slice(0, 2)));
		const fewer = migrate(["--local", "--config", two, "--persist-to", persist]);
		expect(fewer.status, fewer.out).toBe(2);
		expect(fewer.stderr).toMatch(
			/Refused: DB \(migrate-test-control\): the control database records 4 shards by fnv1a32-fmix32; this configuration has 2/,
		);
		expect(applied("DB")?.map((r) => r.name)).toEqual(["0001_shard_directory.sql"]);

		const swapped = join(dir, "swapped.toml");
		writeFileSync(swapped, tomlWith([ids[1], ids[0], ids[2], ids[3]] as string[]));
		const wrong = migrate(["--local", "--config", swapped, "--persist-to", persist]);
		expect(wrong.status, wrong.out).toBe(2);
		expect(wrong.stderr).toMatch(
			/Refused: SHARD_0 \(migrate-test-shard-0\): this database says it is shard 1 of 4 .* but is bound as SHARD_0 of 4/,
		);
		expect(applied("DB")?.map((r) => r.name)).toEqual(["0001_shard_directory.sql"]);
		rmSync(join(dir, "control/0002_more.sql"));
	}, 600_000);
});

describe("the places that run it", () => {
	it("is npm run migrate, the deploy's migration step, npm start's, the e2e services' and CI's", () => {
		const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
		expect(JSON.parse(read("package.json")).scripts.migrate).toBe("node scripts/migrate.mjs");
		expect(read("scripts/deploy.mjs")).toMatch(/\["node", "scripts\/migrate\.mjs", "--env", env, "--remote"\]/);
		expect(read("scripts/start.mjs")).toContain('["scripts/migrate.mjs", "--local"]');
		expect(read("scripts/dev-service.mjs")).toContain('"scripts", "migrate.mjs"), "--local", "--persist-to", making, "--config", config]');
		expect(read(".ci/run")).toMatch(/^npm run migrate -- --local --persist-to "\$migrated"$/m);
	});
});
