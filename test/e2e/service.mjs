// Starts the Worker with `wrangler dev` on a free port, on fresh local storage
// (D1 migrated first), for end-to-end tests that talk HTTP to it like a client.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function freePort() {
	const server = createServer();
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	await new Promise((resolve) => server.close(resolve));
	return typeof address === "object" && address ? address.port : 0;
}

/**
 * @param {{ vars?: Record<string, string> }} options
 * @returns {Promise<{ base: string, adminToken: string, logs: () => string, sql: (statement: string) => void, stop: () => Promise<void> }>}
 */
export async function startService(options = {}) {
	const persist = mkdtempSync(join(tmpdir(), "referral-e2e-"));
	const adminToken = "e2e-admin-token";
	const env = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };
	const migrate = spawnSync("npx", ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist], {
		env,
		encoding: "utf8",
	});
	if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);

	const port = await freePort();
	const vars = { ADMIN_TOKEN: adminToken, ...options.vars };
	const args = [
		"wrangler",
		"dev",
		"--ip",
		"127.0.0.1",
		"--port",
		String(port),
		"--persist-to",
		persist,
		"--show-interactive-dev-session=false",
	];
	for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
	const child = spawn("npx", args, { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
	let output = "";
	child.stdout.on("data", (chunk) => {
		output += chunk;
	});
	child.stderr.on("data", (chunk) => {
		output += chunk;
	});
	const exited = new Promise((resolve) => child.on("exit", resolve));

	const stop = async () => {
		if (child.exitCode === null && child.pid) {
			try {
				process.kill(-child.pid, "SIGTERM"); // the group we started: npx, wrangler and workerd
			} catch {}
			await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
			if (child.exitCode === null) {
				try {
					process.kill(-child.pid, "SIGKILL");
				} catch {}
			}
		}
		rmSync(persist, { recursive: true, force: true });
	};

	const base = `http://127.0.0.1:${port}`;
	const deadline = Date.now() + 90_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${output}`);
		try {
			if ((await fetch(`${base}/health`)).ok) break;
		} catch {}
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`wrangler dev did not answer on ${base}/health:\n${output}`);
		}
		await new Promise((r) => setTimeout(r, 250));
	}
	/** Runs SQL on the local D1 the service uses (to set up states no API call makes). */
	const sql = (statement) => {
		const run = spawnSync("npx", ["wrangler", "d1", "execute", "DB", "--local", "--persist-to", persist, "--command", statement], {
			env,
			encoding: "utf8",
		});
		if (run.status !== 0) throw new Error(`d1 execute failed:\n${run.stdout}\n${run.stderr}`);
	};
	return { base, adminToken, logs: () => output, sql, stop };
}
