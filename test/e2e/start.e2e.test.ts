import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, migratedState } from "../../scripts/dev-service.mjs";
import { waitFor } from "./wait";

// `npm start` as a newcomer runs it (README), in a fresh copy of the
// repository (its own .dev.vars and .wrangler; node_modules linked, the local
// D1 state copied already migrated to spare the 30 s of migrations): it prints
// the demo app's live AND test keys and keeps both in .wrangler/demo-app.json;
// following docs/test-mode.md on it (a second POST .../testkeys) refuses and
// breaks nothing; and the smoke test script passes against it.
const ROOT = new URL("../..", import.meta.url).pathname;
let dir: string;
let child: ChildProcess;
let output = "";
let base: string;

beforeAll(async () => {
	dir = mkdtempSync(join(tmpdir(), "npm-start-"));
	for (const path of [
		"package.json",
		"wrangler.toml",
		".dev.vars.example",
		"src",
		"migrations",
		"migrations-shard",
		"scripts",
		"docs",
		"public",
	])
		cpSync(join(ROOT, path), join(dir, path), { recursive: true });
	symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
	cpSync(migratedState({ ...process.env, CI: "true" }), join(dir, ".wrangler/state"), { recursive: true });
	const port = await freePort();
	base = `http://127.0.0.1:${port}`;
	child = spawn("npm", ["start"], {
		cwd: dir,
		detached: true,
		stdio: ["ignore", "pipe", "pipe"],
		env: { ...process.env, PORT: String(port), CI: "true", WRANGLER_SEND_METRICS: "false" },
	});
	child.stdout?.on("data", (chunk) => (output += chunk));
	child.stderr?.on("data", (chunk) => (output += chunk));
	await waitFor(
		"npm start's ready message",
		async () => (output.includes("Referral service ready") && output.includes("Admin token") ? true : undefined),
		{
			timeoutMs: 170_000,
			context: () => output.slice(-3000),
		},
	);
}, 180_000);

afterAll(() => {
	if (child?.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
});

const demo = () => JSON.parse(readFileSync(join(dir, ".wrangler/demo-app.json"), "utf8")) as Record<string, string>;
const adminToken = () => /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(join(dir, ".dev.vars"), "utf8"))?.[1]?.trim() ?? "";

describe("npm start", () => {
	it("prints the demo app's live keys and its test keys, both kept in .wrangler/demo-app.json", () => {
		const keys = demo();
		expect(keys.testapikey).toMatch(/^ak_test_/);
		expect(keys.testprivatekey).toMatch(/^pk_test_/);
		expect(output).toMatch(new RegExp(`live keys: +apikey += ${keys.apikey}\\n +privatekey = ${keys.privatekey}`));
		expect(output).toMatch(new RegExp(`test keys: +apikey += ${keys.testapikey}\\n +privatekey = ${keys.testprivatekey}`));
		expect(output).toContain("kept in .wrangler/demo-app.json");
	});

	it("keeps the demo's test keys when docs/test-mode.md's POST .../testkeys is followed without rotate", async () => {
		const keys = demo();
		const again = await fetch(`${base}/admin/v1/apps/${keys.appid}/testkeys`, {
			method: "POST",
			headers: { authorization: `Bearer ${adminToken()}` },
		});
		expect(again.status).toBe(409);
		expect(await again.json()).toMatchObject({ errorcode: "testkeys_exist", testapikey: keys.testapikey });
		const call = await fetch(`${base}/saas/v1_0/getcampaigndata`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ apikey: keys.testapikey, privatekey: keys.testprivatekey, campaignid: keys.campaignid }),
		});
		expect(call.status).toBe(200);
	});

	it("passes the smoke test script, with the admin token and the demo's test keys", () => {
		const keys = demo();
		const run = spawnSync(process.execPath, [join(ROOT, "scripts/smoke.mjs"), base], {
			encoding: "utf8",
			timeout: 60_000,
			env: { ...process.env, ADMIN_TOKEN: adminToken(), SMOKE_APIKEY: keys.testapikey, SMOKE_PRIVATEKEY: keys.testprivatekey },
		});
		expect(run.stdout).not.toContain("FAIL");
		expect(run.stdout).not.toContain("skip");
		expect(run.stdout).toContain(`smoke test passed against ${base}`);
		expect(run.status).toBe(0);
	});

	it("the smoke test script fails against something that is not the service", () => {
		const run = spawnSync(process.execPath, [join(ROOT, "scripts/smoke.mjs"), "http://127.0.0.1:9"], { encoding: "utf8", timeout: 60_000 });
		expect(run.status).toBe(1);
		expect(run.stdout).toContain("FAIL  GET /health answers 200");
	});
});
