import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { environmentOf, exampleValuesOf, withDatabaseId } from "../../scripts/provision.mjs";

// `npm run provision -- --env staging --dry-run` (docs/deploy.md): the plan,
// with nothing called. The script runs with every way out (processes,
// sockets, DNS, fetch) made to throw, so a dry run that reached for the
// network or wrangler fails here.
const NO_NETWORK = new URL("./no-network.mjs", import.meta.url).pathname;
const SCRIPT = new URL("../../scripts/provision.mjs", import.meta.url).pathname;
const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");

function dryRun(args: string[]) {
	return spawnSync(process.execPath, ["--import", NO_NETWORK, SCRIPT, ...args], { encoding: "utf8", timeout: 20_000 });
}

describe("provision --dry-run", () => {
	it("prints the plan for staging: its database, queues, dead-letter queues and secrets, calling nothing", () => {
		const run = dryRun(["--env", "staging", "--dry-run"]);
		expect(run.stderr).toBe("");
		expect(run.status).toBe(0);
		for (const name of ["referral-rewards-staging", "referral-outbox-staging", "referral-stripe-staging"]) {
			expect(run.stdout).toContain(name);
		}
		expect(run.stdout).toMatch(/referral-outbox-dlq-staging .*# dead-letter queue/);
		// Every shard database of the pool is created too, each with its binding named (issue 50).
		for (let i = 0; i < 32; i++)
			expect(run.stdout).toMatch(
				new RegExp(
					`D1 database referral-rewards-staging-shard-${i} +npx wrangler d1 create referral-rewards-staging-shard-${i} +# SHARD_${i}: then its id goes into wrangler.toml`,
				),
			);
		expect(run.stdout).toContain("npm run migrate -- --env staging --remote");
		expect(run.stdout).toMatch(/referral-stripe-dlq-staging .*# dead-letter queue/);
		expect(run.stdout).toMatch(/referral-projection-dlq-staging .*# dead-letter queue/);
		expect(run.stdout).toMatch(/R2 bucket +referral-logos-staging .*npx wrangler r2 bucket create referral-logos-staging/);
		expect(run.stdout).toMatch(/Account check: npx wrangler whoami \(not called in a dry run\)/);
		for (const secret of ["ADMIN_TOKEN", "IP_HASH_KEY", "SECRETS_KEY"])
			expect(run.stdout).toContain(`wrangler secret put ${secret} --env staging`);
		expect(run.stdout).toContain("npm run deploy:staging");
	});

	it("flags the example.com values left in the environment's section", () => {
		for (const env of ["staging", "production"]) {
			const run = dryRun(["--env", env, "--dry-run"]);
			expect(run.status).toBe(0);
			expect(run.stdout).toContain(`Example values left in [env.${env}] of wrangler.toml`);
			expect(run.stdout).toMatch(/^ {2}DEFAULT_EMAIL_SENDER = "referrals@example\.com"$/m);
		}
		const values = exampleValuesOf(toml.replaceAll("referrals@example.com", "referrals@mail.shop.test"), "production");
		expect(values).toEqual([]);
		expect(exampleValuesOf('[env.production.vars]\nSHARE_BASE_URL = "https://refer.example.com"\n', "production")).toEqual([
			'SHARE_BASE_URL = "https://refer.example.com"',
		]);
	});

	it("with --set-secrets, says where each secret would come from and never prints a value", () => {
		const value = "a-ci-secret-value-of-more-than-32-characters";
		const run = spawnSync(process.execPath, ["--import", NO_NETWORK, SCRIPT, "--env", "staging", "--dry-run", "--set-secrets"], {
			encoding: "utf8",
			timeout: 20_000,
			env: { ...process.env, ADMIN_TOKEN: value, IP_HASH_KEY: "", SECRETS_KEY: "" },
		});
		expect(run.status).toBe(0);
		expect(run.stdout).toMatch(/ADMIN_TOKEN +from \$ADMIN_TOKEN/);
		expect(run.stdout).toMatch(/IP_HASH_KEY +would be asked for/);
		expect(run.stdout).not.toContain(value);
	});

	it("fails, calling nothing, without the dry run under the same guard (so the guard works)", () => {
		// Its first step is `wrangler d1 create`, which the guard refuses before anything is written.
		const run = dryRun(["--env", "staging"]);
		expect(run.status).not.toBe(0);
		expect(run.stderr).toMatch(/no-network: child_process\.spawnSync called/);
	});

	it("refuses an environment wrangler.toml does not have", () => {
		const run = dryRun(["--env", "qa", "--dry-run"]);
		expect(run.status).toBe(2);
		expect(run.stderr).toMatch(/usage/);
	});

	it("reads each environment's own resources from wrangler.toml", () => {
		expect(environmentOf(toml, "production")).toEqual({
			database: "referral-rewards",
			databaseId: expect.any(String),
			queues: ["referral-outbox", "referral-projection", "referral-stripe"],
			deadLetterQueues: ["referral-outbox-dlq", "referral-projection-dlq", "referral-stripe-dlq"],
			buckets: ["referral-logos"],
			databases: expect.any(Array),
		});
		// The control database, then the 32 shards of the pool (issue 50), each its own name.
		const databases = environmentOf(toml, "production")?.databases ?? [];
		expect(databases.map((d) => d.binding)).toEqual(["DB", ...Array.from({ length: 32 }, (_, i) => `SHARD_${i}`)]);
		expect(databases[0]?.name).toBe("referral-rewards");
		expect(databases.slice(1).map((d) => d.name)).toEqual(Array.from({ length: 32 }, (_, i) => `referral-rewards-shard-${i}`));
		expect(environmentOf(toml, "staging")?.queues).toEqual([
			"referral-outbox-staging",
			"referral-projection-staging",
			"referral-stripe-staging",
		]);
	});
});

describe("provision writes each database's id into its own binding", () => {
	it("replaces the id of the named database only, the control database's or a shard's", () => {
		const id = "0f3c6a1e-5b7d-4c2a-9e8f-1a2b3c4d5e6f";
		const shard = withDatabaseId(toml, "staging", "referral-rewards-staging-shard-5", id);
		expect(
			environmentOf(shard, "staging")
				?.databases.filter((d) => d.id === id)
				.map((d) => d.binding),
		).toEqual(["SHARD_5"]);
		expect(environmentOf(shard, "production")?.databases.some((d) => d.id === id)).toBe(false);
		const control = withDatabaseId(toml, "production", "referral-rewards", id);
		expect(
			environmentOf(control, "production")
				?.databases.filter((d) => d.id === id)
				.map((d) => d.binding),
		).toEqual(["DB"]);
		expect(() => withDatabaseId(toml, "staging", "referral-rewards-shard-5", id)).toThrow(/no \[\[env\.staging\.d1_databases\]\]/);
	});
});
