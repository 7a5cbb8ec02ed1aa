// Starts the Worker under `wrangler dev` for the end-to-end tests and the bench:
// a free local port, fresh local state in a temp --persist-to dir (a copy of
// one D1 state migrated once, migratedState), vars passed with --var. Also reads the CPU time of the process group
// it started (npx, wrangler, workerd), so the bench can wait for background
// work (outbox flushes, the queue consumer) to drain between scenarios.
// `kill()` ends it abruptly (SIGKILL) and keeps its state, and `persistTo`
// starts another on that state: a crash and a restart, for the e2e tests.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;

export async function freePort() {
	const server = createServer();
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	await new Promise((resolve) => server.close(resolve));
	return typeof address === "object" && address ? address.port : 0;
}

/** Keeps only the last `max` characters of a growing log. */
function tail(max) {
	let text = "";
	return {
		add(chunk) {
			text += chunk;
			if (text.length > 2 * max) text = text.slice(-max);
		},
		get: () => text.slice(-max),
	};
}

/**
 * Every start of this process, kept as its promise: a test file's `beforeAll`
 * that times out still leaves its start running, and the service it brings up
 * would outlive the file (test/e2e/setup.ts stops them all after each file).
 * @type {Set<Promise<{ stop: () => Promise<void> }>>}
 */
const started = new Set();

/** Stops every service this process started and not stopped yet, the last started first; waits for starts still under way. */
export async function stopAllServices() {
	const starts = [...started].reverse();
	started.clear();
	for (const start of starts) await (await start.catch(() => null))?.stop();
}

/** Whether a local state directory holds a D1 database file (wrangler keeps them under v3/d1/, beside its metadata.sqlite). */
function holdsD1(dir) {
	const d1 = join(dir, "v3", "d1");
	return existsSync(d1) && readdirSync(d1, { recursive: true }).some((f) => /(^|\/)[0-9a-f]{64}\.sqlite$/.test(String(f)));
}

/**
 * A local state directory with the D1 migrations applied to the control database and every shard (`npm run
 * migrate`, scripts/migrate.mjs), made once per set of migrations and copied for each service: migrating takes
 * about 45 s for the control database's 41 migrations and 4 shards on this 2-core machine (issue 50, 2026-11-29),
 * which every e2e file paid, against milliseconds for the copy. Kept in the temp dir under a hash of both
 * migration folders, the migrate script, the lockfile and wrangler.toml, so a changed migration, wrangler,
 * binding or database id makes a new one. Made in a directory of its own and renamed into place: a process that
 * loses the race to another keeps the other's. A state found without its D1 file (holdsD1) is made again.
 * @param {NodeJS.ProcessEnv} env
 */
export function migratedState(env, config = join(ROOT, "wrangler.toml")) {
	const hash = createHash("sha256");
	for (const folder of ["migrations", "migrations-shard"]) {
		const migrations = join(ROOT, folder);
		for (const file of readdirSync(migrations).sort()) hash.update(`${folder}/${file}`).update(readFileSync(join(migrations, file)));
	}
	// The lockfile: wrangler's version decides the state's layout; wrangler.toml: the databases' ids name their files.
	for (const file of ["package-lock.json", "scripts/migrate.mjs"]) hash.update(readFileSync(join(ROOT, file)));
	// The configuration whose databases are migrated (wrangler.toml, or the bench's one-shard copy: bench/shards.mjs).
	hash.update(readFileSync(config));
	const template = join(tmpdir(), `referral-migrated-${hash.digest("hex").slice(0, 16)}`);
	if (existsSync(template)) {
		if (holdsD1(template)) return template;
		// Only ever named by a whole rename below, so a state without its D1 file lost it since (a temp cleaner):
		// moved out of the name first (a move is whole, so a process racing here sees it or not), removed, made again.
		const broken = mkdtempSync(`${template}-broken-`);
		try {
			renameSync(template, broken);
		} catch {
			// another process moved it first
		}
		rmSync(broken, { recursive: true, force: true });
	}
	const making = mkdtempSync(`${template}-making-`);
	// The same command as `npm run migrate -- --local`; through npx, so the project's node runs it (wrangler needs 22+).
	const migrate = spawnSync("npx", ["node", join(ROOT, "scripts", "migrate.mjs"), "--local", "--persist-to", making, "--config", config], {
		cwd: ROOT,
		env,
		encoding: "utf8",
	});
	if (migrate.status !== 0) {
		rmSync(making, { recursive: true, force: true });
		throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
	}
	try {
		renameSync(making, template);
	} catch {
		rmSync(making, { recursive: true, force: true }); // another process made it first
	}
	return template;
}

/**
 * @param {{ name?: string, vars?: Record<string, string>, logLevel?: string, args?: string[], persistBase?: string, persistTo?: string, config?: string }} options
 *   `persistTo`: the state directory of an earlier service (its `persist`), to restart on it; it is then not removed by `stop()`.
 *   `config`: a wrangler configuration other than wrangler.toml (an absolute path in the project's root, so its relative
 *   paths hold), e.g. the bench's one-shard copy (bench/shards.mjs); its databases are migrated and served.
 * @returns {Promise<{ base: string, adminToken: string, persist: string, logs: () => string, sql: (statement: string) => void, cpuSeconds: () => number, cpuByProcess: () => Record<string, number>, stop: () => Promise<void>, kill: () => Promise<void> }>}
 */
export function startService(options = {}) {
	const start = start_(options);
	started.add(start);
	return start;
}

/** @param {Parameters<typeof startService>[0]} options */
async function start_(options) {
	const name = options.name ?? "dev";
	const persist = options.persistTo ?? mkdtempSync(join(options.persistBase || tmpdir(), `referral-${name}-`));
	const ownsState = options.persistTo === undefined;
	const adminToken = `${name}-admin-token`;
	const env = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };
	// A restart on an earlier service's state finds its migrations applied; a new service starts on a copy of the
	// migrated state (migratedState).
	if (ownsState) cpSync(migratedState(env, options.config), persist, { recursive: true });

	const port = await freePort();
	// Local receivers on 127.0.0.1 are webhook targets in tests: allowed only by this development var.
	// ENVIRONMENT=development: a local service, so its short admin token is served (src/http/admin-token.ts).
	const vars = {
		ADMIN_TOKEN: adminToken,
		ENVIRONMENT: "development",
		ALLOW_LOOPBACK_WEBHOOKS: "1",
		IP_HASH_KEY: `${name}-ip-hash-key`,
		SECRETS_KEY: `${name}-secrets-key`,
		// Links in emails are built on it, never on a request's Host (src/domain/public-origin.ts).
		PUBLIC_ORIGIN: `http://127.0.0.1:${port}`,
		...options.vars,
	};
	const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persist];
	args.push("--show-interactive-dev-session=false");
	if (options.config) args.push("--config", options.config);
	if (options.logLevel) args.push("--log-level", options.logLevel);
	args.push(...(options.args ?? []));
	for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
	const child = spawn("npx", args, { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
	const output = tail(200_000);
	child.stdout.on("data", (chunk) => output.add(chunk));
	child.stderr.on("data", (chunk) => output.add(chunk));
	const exited = new Promise((resolve) => child.on("exit", resolve));

	/** Ends the service as a crash would (SIGKILL to its whole group, no shutdown), keeping its state for a restart. */
	const kill = async () => {
		if (child.exitCode === null && child.pid) {
			try {
				process.kill(-child.pid, "SIGKILL");
			} catch {}
			await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
		}
	};

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
		if (ownsState) rmSync(persist, { recursive: true, force: true });
	};

	/** User + system CPU seconds used so far by the processes of our group (Linux /proc), in all and by process name. */
	const ticks = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
	const cpuByProcess = () => {
		const byName = {};
		for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
			try {
				const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
				const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
				const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
				// fields[2] is the process group; [11] utime, [12] stime (man 5 proc, counted from field 3).
				if (Number(fields[2]) === child.pid) byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticks;
			} catch {}
		}
		return byName;
	};
	const cpuSeconds = () => Object.values(cpuByProcess()).reduce((a, b) => a + b, 0);

	const base = `http://127.0.0.1:${port}`;
	const deadline = Date.now() + 90_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${output.get()}`);
		try {
			if ((await fetch(`${base}/health`)).ok) break;
		} catch {}
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`wrangler dev did not answer on ${base}/health:\n${output.get()}`);
		}
		await new Promise((r) => setTimeout(r, 250));
	}
	/** Runs SQL on the local D1 the service uses (to set up states no API call makes). */
	const sql = (statement) => {
		const config = options.config ? ["--config", options.config] : [];
		const run = spawnSync(
			"npx",
			["wrangler", "d1", "execute", "DB", "--local", "--persist-to", persist, ...config, "--command", statement],
			{
				env,
				encoding: "utf8",
			},
		);
		if (run.status !== 0) throw new Error(`d1 execute failed:\n${run.stdout}\n${run.stderr}`);
	};
	return { base, adminToken, persist, logs: output.get, sql, cpuSeconds, cpuByProcess, stop, kill };
}
