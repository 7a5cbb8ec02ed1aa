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
import { pathToFileURL } from "node:url";
import { startService } from "../scripts/dev-service.mjs";

/** workerd evicts a Durable Object after 10 s without a request (see run.mjs); a second more. */
const EVICTED_AFTER_MS = 11_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const round = (n) => Math.round(n * 100) / 100;

/**
 * The counts of a conversion rewarding a friend and a referrer (bench/README.md, "Floors"), but its D1 round
 * trips: one request, a call to the friend's ledger and from it to the referrer's, five write transactions
 * (friend: grant, webhook, flush; referrer: grant, flush), about 26 ledger statements. `d1` is the scenario's
 * all-in D1 round trips per conversion (2 on the request path, the projection's share since issue 33).
 */
export function conversionFloor(ms, { d1, created = 0, woken = false }) {
	const steady = ms.request + d1 * ms.d1 + 2 * ms.firstCall + 5 * ms.turn + 26 * ms.statement;
	return steady + created * (ms.newObject + ms.schema) + (woken ? ms.woken : 0);
}

/**
 * Measures the platform's parts under `wrangler dev` on the fixture in
 * bench/floors/ (its own service, started and stopped here). Answers the
 * parts (ms of workerd CPU) with their labels, and the raw medians.
 */
export async function measureFloors({
	requests = Number(process.env.BENCH_FLOOR_REQUESTS || 400),
	/** Requests in flight at once, as the bench's 16 connections (BENCH_FLOOR_CONNECTIONS=1: one after another). */
	connections = Number(process.env.BENCH_FLOOR_CONNECTIONS || 16),
	rounds = Number(process.env.BENCH_FLOOR_ROUNDS || 3),
	persistBase = process.env.BENCH_PERSIST_BASE || undefined,
	log = (...args) => console.log(`[floors ${new Date().toISOString().slice(11, 19)}]`, ...args),
} = {}) {
	const service = await startService({ name: "floors", args: ["--config", "bench/floors/wrangler.toml"], persistBase });
	const workerdCpu = () => service.cpuByProcess().workerd ?? 0;
	const get = async (path) => {
		const res = await fetch(`${service.base}${path}`);
		if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
		await res.arrayBuffer();
	};
	let unique = 0;
	/** workerd CPU ms per request of `requests` requests, `connections` at a time; `path(i)` gives request i's path. */
	async function measure(path) {
		await sleep(300); // let the previous kind's background work end
		const before = workerdCpu();
		let next = 0;
		const connection = async () => {
			while (next < requests) await get(path(next++));
		};
		await Promise.all(Array.from({ length: connections }, connection));
		return ((workerdCpu() - before) * 1000) / requests;
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
			const names = Array.from({ length: requests }, () => `woken-${++unique}`);
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
		for (let r = 0; r < rounds; r++) {
			for (const [kind, run] of Object.entries(kinds)) samples[kind].push(await run());
			log(
				`round ${r + 1} of ${rounds}:`,
				JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, round(v.at(-1))]))),
			);
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
		return { m, parts, ms: Object.fromEntries(Object.entries(parts).map(([k, [, v]]) => [k, v])) };
	} finally {
		await service.stop();
	}
}

// Run directly (`node bench/floors.mjs`): the parts, and a conversion's parts added up as before issue 33 (4 D1
// round trips: 2 on its path and one per ledger flush) and after it (2, the projection's coalesced share aside).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
	const { m, parts, ms } = await measureFloors();
	console.log("\nworkerd CPU ms per request (median of rounds):");
	for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(16)} ${round(v)}`);
	console.log("\nParts (ms of workerd CPU):");
	for (const [label, v] of Object.values(parts)) console.log(`  ${label.padEnd(52)} ${round(v)}`);
	console.log(
		"\nA conversion's platform parts added up (ms of workerd CPU, before any of the service's own JavaScript), 4 / 2 D1 round trips:",
	);
	for (const [label, shape] of [
		["both ledgers in memory       ", {}],
		["the friend's ledger created  ", { created: 1 }],
		["both ledgers created         ", { created: 2 }],
		["the friend's ledger woken    ", { woken: true }],
	]) {
		console.log(`  ${label} ${round(conversionFloor(ms, { ...shape, d1: 4 }))} / ${round(conversionFloor(ms, { ...shape, d1: 2 }))}`);
	}
}
