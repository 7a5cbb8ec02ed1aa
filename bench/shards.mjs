// `npm run bench:shards` (node bench/shards.mjs): the service with 1 D1 shard
// and with 4, side by side (issue 50). Each configuration gets a fresh
// `wrangler dev` (wrangler.toml for 4 shards; for 1, a copy of it with
// SHARD_0 alone and SHARD_COUNT = "1", written beside it as
// wrangler.bench-1-shard.toml and removed after), migrated by `npm run
// migrate`, and the same registration load (new users, every other one with
// the code of one of 20 referrers). It reports per configuration the
// registrations per second, their latency, and the all-in D1 round trips per
// registration in all and per database (the control database DB and each
// SHARD_<n>: the service's own counts, D1_QUERY_COUNT, GET /__metrics/d1).
//
// Phase 2a (this file's first version): registration does not route to the
// shards yet, so both configurations run today's registration on DB alone and
// every SHARD_<n> column reads 0. The figure issue 50 asks for, registrations
// per second with 1 and 4 shards, comes when phase 2b moves registration to
// the shards; this scenario then measures it unchanged.
//
// Settings: BENCH_SHARDS (default "1,4"), BENCH_DURATION (default 8 s),
// BENCH_CONNECTIONS (default 16). Writes bench/shards.json.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { startService } from "../scripts/dev-service.mjs";

const ROOT = new URL("..", import.meta.url).pathname;
const env = process.env;
const counts = (env.BENCH_SHARDS || "1,4").split(",").map((s) => Number(s.trim()));
const duration = Number(env.BENCH_DURATION || 8);
const connections = Number(env.BENCH_CONNECTIONS || 16);
const out = new URL("./shards.json", import.meta.url).pathname;
const log = (...args) => console.log(`[shards ${new Date().toISOString().slice(11, 19)}]`, ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * wrangler.toml's text with its top level (the local configuration) cut to `count` shards: the
 * [[d1_databases]] blocks of SHARD_<count> and up dropped, SHARD_COUNT set to `count`. The environments'
 * sections are left as they are (wrangler reads only the top level without --env). Exported for its check.
 */
export function configWithShards(text, count) {
	const envAt = text.search(/^\[env\./m);
	const top = envAt < 0 ? text : text.slice(0, envAt);
	const rest = envAt < 0 ? "" : text.slice(envAt);
	// Blocks start at a table header; a dropped block takes its lines up to the next header.
	const blocks = top.split(/^(?=\[)/m);
	const kept = blocks.filter((block) => {
		const shard = /^\[\[d1_databases\]\][\s\S]*?^binding\s*=\s*"SHARD_(\d+)"/m.exec(block);
		return !shard || Number(shard[1]) < count;
	});
	const cut = kept.join("").replace(/^SHARD_COUNT\s*=\s*"\d+"/m, `SHARD_COUNT = "${count}"`);
	if (!cut.includes(`SHARD_COUNT = "${count}"`)) throw new Error("wrangler.toml has no top-level SHARD_COUNT to set");
	return cut + rest;
}

/** The configuration file of `count` shards: wrangler.toml itself for its own count, else a copy cut to `count`. */
function configFor(count) {
	const path = join(ROOT, "wrangler.toml");
	const text = readFileSync(path, "utf8");
	const own = Number(/^SHARD_COUNT\s*=\s*"(\d+)"/m.exec(text)?.[1]);
	if (count === own) return { path, made: false };
	if (!(count >= 1 && count < own)) throw new Error(`BENCH_SHARDS: ${count} shards; wrangler.toml binds ${own} locally (1 to ${own})`);
	const made = join(ROOT, `wrangler.bench-${count}-shard.toml`);
	writeFileSync(made, configWithShards(text, count));
	return { path: made, made: true };
}

async function json(res, what) {
	const body = await res.json().catch(() => null);
	if (!res.ok) throw new Error(`${what}: ${res.status} ${JSON.stringify(body)}`);
	return body;
}

/** One configuration: its service, the load, and the counts. */
async function measure(count) {
	const config = configFor(count);
	const service = await startService({ name: `shards${count}`, vars: { D1_QUERY_COUNT: "1" }, config: config.path });
	try {
		const admin = async (method, path, body) =>
			json(
				await fetch(`${service.base}/admin/v1${path}`, {
					method,
					headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
					body: body && JSON.stringify(body),
				}),
				`${method} ${path}`,
			);
		// The Worker's own view of its pool, after its check of the shard directory (db/shards.ts).
		const pool = await admin("GET", "/shards");
		if (pool.shardcount !== count || !pool.shards.every((s) => s.identityok))
			throw new Error(`expected ${count} shards, the Worker routes by ${JSON.stringify(pool)}`);
		const app = await admin("POST", "/apps", { name: `bench ${count} shards`, landingurl: "https://example.com/join" });
		// The bench's registration campaign: a referrer reward on Signup, as bench/run.mjs's (no event is sent here).
		await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "shards",
			velocitythreshold: 0,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" }],
		});
		const call = async (op, body) =>
			json(
				await fetch(`${service.base}/saas/v1_0/${op}`, {
					method: "POST",
					headers: { "content-type": "application/json" },
					body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, ...body }),
				}),
				op,
			);
		const referrers = [];
		for (let i = 0; i < 20; i++) referrers.push((await call("register", { email: `ref-${i}@bench.example` })).referralcode);
		const totals = async () => json(await fetch(`${service.base}/__metrics/d1`), "totals");
		let serial = 0;
		const body = () => {
			const n = ++serial;
			return JSON.stringify({
				apikey: app.apikey,
				privatekey: app.privatekey,
				email: `user-${n}-${Date.now().toString(36)}@bench.example`,
				...(n % 2 === 0 ? { referrercode: referrers[n % referrers.length] } : {}),
			});
		};
		const statuses = {};
		const run = (seconds) =>
			autocannon({
				url: `${service.base}/saas/v1_0/register`,
				method: "POST",
				connections,
				duration: seconds,
				headers: { "content-type": "application/json" },
				requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
				timeout: 30,
			}).on("response", (_client, status) => {
				statuses[status] = (statuses[status] ?? 0) + 1;
			});
		// A warm-up of the same load, not counted: a fresh isolate's first seconds (compiling, first D1 pages) are slower.
		await run(2);
		await sleep(2000);
		for (const key of Object.keys(statuses)) delete statuses[key];
		const before = await totals();
		const result = await run(duration);
		// Background work of the registrations (emails, webhooks' outbox) lands in the counts: wait until they stop moving.
		let after = await totals();
		for (let calm = 0, i = 0; calm < 2 && i < 60; i++) {
			await sleep(1000);
			const now = await totals();
			calm = now.total.roundtrips === after.total.roundtrips ? calm + 1 : 0;
			after = now;
		}
		const requests = after.requests - before.requests;
		const perRequest = (a, b) => (requests > 0 ? Math.round((((a ?? 0) - (b ?? 0)) / requests) * 100) / 100 : null);
		const byDatabase = Object.fromEntries(
			["DB", ...Array.from({ length: count }, (_, n) => `SHARD_${n}`)].map((name) => [
				name,
				perRequest(after.byDatabase?.[name]?.roundtrips, before.byDatabase?.[name]?.roundtrips),
			]),
		);
		return {
			shards: count,
			config: config.made ? `wrangler.bench-${count}-shard.toml (generated)` : "wrangler.toml",
			registrationsPerSecond: result.requests.average,
			latencyP50Ms: result.latency.p50,
			latencyP99Ms: result.latency.p99,
			errors: result.errors + result.non2xx,
			statuses,
			d1RoundTripsPerRegistration: perRequest(after.total.roundtrips, before.total.roundtrips),
			d1RoundTripsPerRegistrationByDatabase: byDatabase,
		};
	} finally {
		await service.stop();
		if (config.made) rmSync(config.path, { force: true });
	}
}

async function main() {
	const rows = [];
	for (const count of counts) {
		log(`${count} shard(s): starting wrangler dev`);
		rows.push(await measure(count));
		log(`${count} shard(s): ${Math.round(rows.at(-1).registrationsPerSecond)} registrations/s`);
	}
	const names = ["DB", ...Array.from({ length: Math.max(...counts) }, (_, n) => `SHARD_${n}`)];
	console.log(`\n| shards | register req/s | p50 ms | p99 ms | errors | D1 round trips each | ${names.join(" | ")} |`);
	console.log(`| -----: | -------------: | -----: | -----: | -----: | ------------------: | ${names.map(() => "--:").join(" | ")} |`);
	for (const r of rows)
		console.log(
			`| ${r.shards} | ${Math.round(r.registrationsPerSecond)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} | ${r.errors} | ${r.d1RoundTripsPerRegistration} | ${names.map((n) => r.d1RoundTripsPerRegistrationByDatabase[n] ?? "-").join(" | ")} |`,
		);
	console.log(
		"\nPhase 2a: registration does not route to the shards yet (every SHARD_<n> column is 0), so these req/s are today's one-database registration in both configurations, the baseline phase 2b's sharded registration is compared with.",
	);
	writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), duration, connections, rows }, null, 2)}\n`);
	log(`wrote ${out}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
