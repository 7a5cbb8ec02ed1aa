// `npm start`: a ready-to-curl local service. Creates .dev.vars when missing
// (with a random admin token), applies the D1 migrations locally, starts
// `wrangler dev` on 127.0.0.1:8787, then creates (once) a demo app with a demo
// campaign and prints its keys and the admin token.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { DEMO_APP, DEMO_CAMPAIGN } from "./demo-app.mjs";

const PORT = Number(process.env.PORT ?? 8787);
const BASE = `http://127.0.0.1:${PORT}`;
const DEMO_FILE = ".wrangler/demo-app.json";
/** Tokens anyone who read this repository knows (src/http/admin-token.ts): never kept as the local admin token. */
const DOCUMENTED_DEFAULT_TOKENS = ["change-me", "dev-admin-token", "test-admin-token"];

const example = readFileSync(".dev.vars.example", "utf8");
const exampleLine = (name, fallback) => new RegExp(`^${name}=.*$`, "m").exec(example)?.[0] ?? fallback;
const randomToken = () => randomBytes(32).toString("base64url");

if (!existsSync(".dev.vars")) {
	writeFileSync(".dev.vars", example.replace(/^ADMIN_TOKEN=.*$/m, `ADMIN_TOKEN=${randomToken()}`));
	console.log("Created .dev.vars with a random ADMIN_TOKEN (printed below once the service is up)");
} else {
	let vars = readFileSync(".dev.vars", "utf8");
	const added = [];
	const current = /^ADMIN_TOKEN=(.*)$/m.exec(vars)?.[1]?.trim();
	if (current === undefined || DOCUMENTED_DEFAULT_TOKENS.includes(current)) {
		// A .dev.vars from before the random token: the guessable default goes.
		vars =
			current === undefined
				? `${vars.replace(/\n?$/, "\n")}ADMIN_TOKEN=${randomToken()}\n`
				: vars.replace(/^ADMIN_TOKEN=.*$/m, `ADMIN_TOKEN=${randomToken()}`);
		added.push(current === undefined ? "a random ADMIN_TOKEN" : `a random ADMIN_TOKEN in place of the default '${current}'`);
	}
	// Lines a .dev.vars from an older example lacks: without IP_HASH_KEY calls with an ipaddress fail, without ENVIRONMENT the admin API is refused.
	for (const [name, fallback] of [
		["IP_HASH_KEY", "IP_HASH_KEY=dev-ip-hash-key-change-me"],
		["SECRETS_KEY", "SECRETS_KEY=dev-secrets-key-change-me"],
		["ENVIRONMENT", "ENVIRONMENT=development"],
	]) {
		if (new RegExp(`^${name}=`, "m").test(vars)) continue;
		vars = `${vars.replace(/\n?$/, "\n")}${exampleLine(name, fallback)}\n`;
		added.push(name);
	}
	if (added.length > 0) {
		writeFileSync(".dev.vars", vars);
		console.log(`Updated .dev.vars: ${added.join(", ")}`);
	}
}
const adminToken = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(".dev.vars", "utf8"))?.[1]?.trim() ?? "";

// The control database and the 4 local shards, with `npm run migrate`'s script
// (scripts/migrate.mjs): its output is kept, one line shown, and the whole of
// it only on failure.
const migrate = spawnSync(process.execPath, ["scripts/migrate.mjs", "--local"], {
	encoding: "utf8",
	env: { ...process.env, CI: "true" },
});
if (migrate.status !== 0) {
	process.stdout.write(`${migrate.stdout ?? ""}${migrate.stderr ?? ""}`);
	process.exit(migrate.status ?? 1);
}
const applying = [...(migrate.stdout ?? "").matchAll(/^ +(\w+) .*: applying /gm)].map((m) => m[1]);
console.log(
	applying.length === 0
		? "Local D1: migrations up to date (the control database and every shard)"
		: `Local D1: migrated ${applying.join(", ")}; every database at the code's version`,
);

// wrangler dev's start-up output (banner, bindings table, warnings) is held
// until the service answers, then dropped for one line, or printed whole if
// it never does. From then on everything it prints passes through.
console.log(`Starting wrangler dev on ${BASE} ...`);
const dev = spawn("npx", ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(PORT), ...process.argv.slice(2)], {
	stdio: ["inherit", "pipe", "pipe"],
});
let startupOutput = "";
let started = false;
for (const [stream, target] of [
	[dev.stdout, process.stdout],
	[dev.stderr, process.stderr],
]) {
	stream.on("data", (chunk) => {
		if (started) target.write(chunk);
		else startupOutput += chunk;
	});
}
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => {
	if (!started) process.stdout.write(startupOutput);
	process.exit(code ?? 0);
});

async function waitForHealth() {
	for (let i = 0; i < 120; i++) {
		try {
			if ((await fetch(`${BASE}/health`)).ok) return;
		} catch {}
		await new Promise((r) => setTimeout(r, 500));
	}
	throw new Error(`the service did not answer on ${BASE}/health`);
}

async function adminCall(method, path, body) {
	const res = await fetch(`${BASE}/admin/v1${path}`, {
		method,
		headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
		body: body && JSON.stringify(body),
	});
	return { status: res.status, body: await res.json() };
}

async function ensureDemo() {
	if (existsSync(DEMO_FILE)) {
		const demo = JSON.parse(readFileSync(DEMO_FILE, "utf8"));
		if ((await adminCall("GET", `/apps/${demo.appid}`)).status === 200) return withTestKeys(demo);
	}
	const app = await adminCall("POST", "/apps", DEMO_APP);
	if (app.status !== 201) throw new Error(`demo app: ${JSON.stringify(app.body)}`);
	const campaign = await adminCall("POST", `/apps/${app.body.appid}/campaigns`, DEMO_CAMPAIGN);
	if (campaign.status !== 201) throw new Error(`demo campaign: ${JSON.stringify(campaign.body)}`);
	const demo = { ...app.body, campaignid: campaign.body.campaignid };
	mkdirSync(".wrangler", { recursive: true });
	writeFileSync(DEMO_FILE, `${JSON.stringify(demo, null, 2)}\n`);
	return demo;
}

/**
 * A demo file from before test mode has no test pair: it is created (not
 * rotated: the service refuses to replace a pair someone may use, 409
 * testkeys_exist) and kept in the file beside the live pair.
 */
async function withTestKeys(demo) {
	if (demo.testapikey && demo.testprivatekey) return demo;
	const made = await adminCall("POST", `/apps/${demo.appid}/testkeys`);
	if (made.status !== 200) return demo;
	const kept = { ...demo, testapikey: made.body.testapikey, testprivatekey: made.body.testprivatekey };
	writeFileSync(DEMO_FILE, `${JSON.stringify(kept, null, 2)}\n`);
	return kept;
}

try {
	await waitForHealth();
	const demo = await ensureDemo();
	console.log(`
Referral service ready on ${BASE}
Dashboard: ${BASE}/dashboard  (sign in with the admin token below)
Demo app:  appid=${demo.appid}  campaignid=${demo.campaignid}
  live keys:  apikey     = ${demo.apikey}
              privatekey = ${demo.privatekey}
  test keys:  apikey     = ${demo.testapikey ?? "(none: the app has a test pair this file lacks; see docs/test-mode.md to rotate it)"}
              privatekey = ${demo.testprivatekey ?? ""}
  (test keys: what they make is invisible to the live keys; docs/test-mode.md)
Try:
  curl -s ${BASE}/saas/v1_0/getcampaigndata -H 'content-type: application/json' \\
    -d '{"apikey":"${demo.apikey}","privatekey":"${demo.privatekey}","campaignid":"${demo.campaignid}"}'
Admin token (ADMIN_TOKEN in .dev.vars; for the dashboard and the admin API):
  ${adminToken}
(both pairs are kept in ${DEMO_FILE}; rotating the test pair with {"rotate": true} means updating that file)
`);
	started = true;
} catch (error) {
	process.stdout.write(startupOutput);
	console.error(String(error));
	dev.kill("SIGTERM");
	process.exit(1);
}
