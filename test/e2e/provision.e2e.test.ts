import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { environmentOf } from "../../scripts/provision.mjs";

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
		expect(run.stdout).toMatch(/referral-stripe-dlq-staging .*# dead-letter queue/);
		for (const secret of ["ADMIN_TOKEN", "IP_HASH_KEY", "SECRETS_KEY"])
			expect(run.stdout).toContain(`wrangler secret put ${secret} --env staging`);
		expect(run.stdout).toContain("npm run deploy:staging");
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
			deadLetterQueues: ["referral-outbox-dlq", "referral-stripe-dlq"],
		});
		expect(environmentOf(toml, "staging")?.queues).toEqual([
			"referral-outbox-staging",
			"referral-projection-staging",
			"referral-stripe-staging",
		]);
	});
});
