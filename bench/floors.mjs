// `node bench/floors.mjs`: what the platform itself costs under `wrangler dev`,
// in workerd CPU per request, with nothing of the service around it (the
// fixture in bench/floors/): an HTTP request, a D1 round trip, a Durable
// Object call, a new object, the ledger's schema, a waking object, a write
// transaction, a SQL statement. Each is the difference between two kinds of
// request that differ in that one thing, measured over BENCH_FLOOR_REQUESTS
// requests sent BENCH_FLOOR_CONNECTIONS at a time (16, as the bench's load:
// one after another each part costs more, the process waking for each), in
// BENCH_FLOOR_ROUNDS rounds (the median is shown).
// Then the same parts added up for the counts a conversion has: about the
// least a conversion can cost in this design whatever its JavaScript does
// (an estimate: the parts are measured apart, and a part's own JavaScript,
// such as D1's client, is in it).
// See bench/README.md ("Floors").
import { startService } from "../scripts/dev-service.mjs";

const REQUESTS = Number(process.env.BENCH_FLOOR_REQUESTS || 400);
/** Requests in flight at once, as the bench's 16 connections (BENCH_FLOOR_CONNECTIONS=1: one after another). */
const CONNECTIONS = Number(process.env.BENCH_FLOOR_CONNECTIONS || 16);
const ROUNDS = Number(process.env.BENCH_FLOOR_ROUNDS || 3);
/** workerd evicts a Durable Object after 10 s without a request (see run.mjs); a second more. */
const EVICTED_AFTER_MS = 11_000;

const log = (...args) => console.log(`[floors ${new Date().toISOString().slice(11, 19)}]`, ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const round = (n) => Math.round(n * 100) / 100;

const service = await startService({
	name: "floors",
	args: ["--config", "bench/floors/wrangler.toml"],
	persistBase: process.env.BENCH_PERSIST_BASE || undefined,
});
const workerdCpu = () => service.cpuByProcess().workerd ?? 0;
const get = async (path) => {
	const res = await fetch(`${service.base}${path}`);
	if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
	await res.arrayBuffer();
};

let unique = 0;
/** workerd CPU ms per request of `REQUESTS` requests, `CONNECTIONS` at a time; `path(i)` gives request i's path. */
async function measure(path) {
	await sleep(300); // let the previous kind's background work end
	const before = workerdCpu();
	let next = 0;
	const connection = async () => {
		while (next < REQUESTS) await get(path(next++));
	};
	await Promise.all(Array.from({ length: CONNECTIONS }, connection));
	return ((workerdCpu() - before) * 1000) / REQUESTS;
}

const kinds = {
	request: () => measure(() => "/health"),
	d1x1: () => measure(() => "/d1?n=1"),
	d1x5: () => measure(() => "/d1?n=5"),
	callx1: () => measure(() => "/rpc?n=1&name=warm"),
	callx5: () => measure(() => "/rpc?n=5&name=warm"),
	newObject: () => measure(() => `/rpc?n=1&name=new-${++unique}`),
	writeWarm: () => measure(() => "/write?name=warm"),
	writeNew: () => measure(() => `/write?name=new-${++unique}`),
	statementsx1: () => measure(() => "/statements?n=1&name=warm"),
	statementsx21: () => measure(() => "/statements?n=21&name=warm"),
	turnsx1: () => measure(() => "/turns?n=1&name=warm"),
	turnsx2: () => measure(() => "/turns?n=2&name=warm"),
	async writeWoken() {
		const names = Array.from({ length: REQUESTS }, () => `woken-${++unique}`);
		for (const name of names) await get(`/write?name=${name}`);
		await sleep(EVICTED_AFTER_MS);
		return measure((i) => `/write?name=${names[i]}`);
	},
};

try {
	const samples = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
	// Warm-up: the isolate, the warm object and its schema, D1.
	for (const path of ["/health", "/d1?n=5", "/write?name=warm", "/statements?n=21&name=warm", "/turns?n=2&name=warm"]) {
		for (let i = 0; i < 20; i++) await get(path);
	}
	for (let r = 0; r < ROUNDS; r++) {
		for (const [kind, run] of Object.entries(kinds)) samples[kind].push(await run());
		log(`round ${r + 1} of ${ROUNDS}:`, JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, round(v.at(-1))]))));
	}
	const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
	// Each part by name, with what it is called in the output.
	const parts = {
		request: ["HTTP request (the floor of any request)", m.request],
		d1: ["D1 round trip", (m.d1x5 - m.d1x1) / 4],
		firstCall: ["first Durable Object call of a request", m.callx1 - m.request],
		call: ["further call to the same object", (m.callx5 - m.callx1) / 4],
		newObject: ["new object (created by its first call)", m.newObject - m.callx1],
		schema: ["ledger schema (one script) on a new object", m.writeNew - m.writeWarm - (m.newObject - m.callx1)],
		woken: ["waking an evicted object (with the ledger schema)", m.writeWoken - m.writeWarm],
		turn: ["write transaction in a later turn (commit)", m.turnsx2 - m.turnsx1],
		statement: ["SQL statement on the object's SQLite", (m.statementsx21 - m.statementsx1) / 20],
	};
	const ms = Object.fromEntries(Object.entries(parts).map(([k, [, v]]) => [k, v]));
	console.log("\nworkerd CPU ms per request (median of rounds):");
	for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(16)} ${round(v)}`);
	console.log("\nParts (ms of workerd CPU):");
	for (const [label, v] of Object.values(parts)) console.log(`  ${label.padEnd(52)} ${round(v)}`);
	// The counts of a conversion rewarding a friend and a referrer (bench/README.md, "Floors"): one request, two D1
	// round trips on its path and one per ledger flush, a call to the friend's ledger and from it to the referrer's,
	// five write transactions (friend: grant, webhook, flush; referrer: grant, flush), about 26 ledger statements.
	const steady = ms.request + 4 * ms.d1 + 2 * ms.firstCall + 5 * ms.turn + 26 * ms.statement;
	const created = ms.newObject + ms.schema;
	console.log("\nA conversion's platform parts added up (ms of workerd CPU, before any of the service's own JavaScript):");
	console.log(`  both ledgers in memory        ${round(steady)}`);
	console.log(`  the friend's ledger created   ${round(steady + created)}`);
	console.log(`  both ledgers created          ${round(steady + 2 * created)}`);
	console.log(`  the friend's ledger woken     ${round(steady + ms.woken)}`);
} finally {
	await service.stop();
}
