// `node bench/floors.mjs`: what the platform itself costs under `wrangler dev`,
// in workerd CPU per request, with nothing of the service around it (the
// fixture in bench/floors/): an HTTP request, a D1 round trip, a Durable
// Object call, a new object, the ledger's schema, a waking object, a write
// transaction, a SQL statement, a row written (in D1 and in an object). Each is the difference between two kinds of
// request that differ in that one thing, measured over BENCH_FLOOR_REQUESTS
// requests sent BENCH_FLOOR_CONNECTIONS at a time (16, as the bench's load:
// one after another each part costs more, the process waking for each), in
// BENCH_FLOOR_ROUNDS rounds (each part priced within each round, the median of
// its rounds shown).
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
 * What a conversion was made of, per request, counted by the service itself in the run (`GET /__metrics/d1`:
 * src/instrument/platform-parts.ts and d1-metrics.ts; bench/README.md, "Floors"): all-in D1 round trips (`d1`),
 * ledger calls made by the Worker and by ledgers (`calls`) and by the projection consumer (`ackCalls`), the
 * ledgers' write transactions and statements, ledgers created and woken, projection queue messages.
 */
export function countedShape(d1AllIn, parts, rowsWritten) {
	const created = parts.ledgersCreated;
	return {
		// Rows written (table rows and index entries, triggers' included): D1's meta.rows_written, the ledgers' cursors.
		d1Rows: rowsWritten?.d1 ?? 0,
		rows: rowsWritten?.ledgers ?? 0,
		d1: d1AllIn.total,
		// Statements past the first of each round trip (a batch's others): D1 runs them, the round trip prices one.
		d1Statements: Math.max(0, parts.d1Statements - d1AllIn.total),
		calls: parts.callsFromWorker + parts.callsFromLedgers,
		ackCalls: parts.callsFromProjection,
		// A new ledger's schema script is one transaction and (with its table check) two statements: in `schema`.
		transactions: Math.max(0, parts.ledgerTransactions - created),
		statements: Math.max(0, parts.ledgerStatements - 2 * created),
		created,
		woken: Math.max(0, parts.ledgerStarts - created),
		messages: parts.projectionMessages,
	};
}

/**
 * The platform parts of a conversion added up, each part's price (`ms`, measureFloors) times its count
 * (countedShape): the least such a conversion costs in this design whatever its JavaScript does.
 */
export function conversionFloor(ms, c) {
	// A part measured below zero (a difference lost in the noise of a short run) counts as nothing, never as less.
	const p = (name) => Math.max(0, ms[name] ?? 0);
	return (
		p("request") +
		c.d1 * p("d1") +
		(c.d1Statements ?? 0) * p("d1Statement") +
		c.calls * p("firstCall") +
		c.ackCalls * p("ackCall") +
		c.transactions * p("turn") +
		c.statements * p("statement") +
		c.created * (p("newObject") + p("schema")) +
		c.woken * p("woken") +
		c.messages * p("queueMessage") +
		(c.d1Rows ?? 0) * p("d1Row") +
		(c.rows ?? 0) * p("row")
	);
}

/** The counts as before issue 33's review (assumed, not counted): one request, 2 calls, 5 turns, 26 statements. */
export function assumedShape({ d1, created = 0, woken = false }) {
	return {
		d1,
		d1Statements: 0,
		calls: 2,
		ackCalls: 0,
		transactions: 5,
		statements: 26,
		created,
		woken: woken ? 1 : 0,
		messages: 0,
		d1Rows: 0,
		rows: 0,
	};
}

/** The parts by name, with what each is called in the output, priced from one set of kinds' ms per request (`m`). */
function priced(m) {
	return {
		request: ["HTTP request (the floor of any request)", m.request],
		d1: ["D1 round trip", (m.d1x5 - m.d1x1) / 4],
		d1Statement: ["further D1 statement in a batch (SELECT ?)", (m.d1batchx21 - m.d1batchx1) / 20],
		firstCall: ["first Durable Object call of a request", m.callx1 - m.request],
		call: ["further call to the same object", (m.callx5 - m.callx1) / 4],
		newObject: ["new object (created by its first call)", m.newObject - m.callx1],
		schema: ["ledger schema (one script) on a new object", m.writeNew - m.writeWarm - (m.newObject - m.callx1)],
		woken: ["waking an evicted object (with the ledger schema)", m.writeWoken - m.writeWarm],
		turn: ["write transaction in a later turn (commit)", m.turnsx2 - m.turnsx1],
		statement: ["SQL statement on the object's SQLite", (m.statementsx21 - m.statementsx1) / 20],
		row: ["row written on the object's SQLite (one INSERT of many)", (m.rowsx21 - m.rowsx1) / 20],
		d1Row: ["row written in D1 (one INSERT of many)", (m.d1rowsx21 - m.d1rowsx1) / 20],
		queueMessage: ["queue message from an object (send, consumer's share)", m.queue - m.writeWarm],
		ackCall: ["consumer's call back to the message's object", m.queueAck - m.queue],
	};
}

/**
 * Measures the platform's parts under `wrangler dev` on the fixture in
 * bench/floors/ (its own service, started and stopped here). Answers the
 * parts (ms of workerd CPU) with their labels, the raw medians, and each round's
 * own prices (`rounds`: the spread of a floor between rounds).
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
	/** The fixture's queue counts: messages sent, and consumed by its consumer. */
	const queued = async () => (await fetch(`${service.base}/queued`)).json();
	/**
	 * workerd CPU ms per request of `requests` requests, `connections` at a time; `path(i)` gives request i's path.
	 * With `drain`, the CPU is read once the queue consumer has taken every message sent (the batch's second to
	 * fill, then every half second: each look is a request, 1 in `requests`, left in).
	 */
	async function measure(path, { drain = false } = {}) {
		await sleep(300); // let the previous kind's background work end
		const before = workerdCpu();
		let next = 0;
		const connection = async () => {
			while (next < requests) await get(path(next++));
		};
		await Promise.all(Array.from({ length: connections }, connection));
		let after = workerdCpu();
		if (drain) {
			await sleep(1200);
			for (let looks = 0; ; looks++) {
				after = workerdCpu();
				const q = await queued();
				if (q.consumed >= q.sent) break;
				if (looks > 60) throw new Error(`the floors' queue consumer did not take its messages: ${JSON.stringify(q)}`);
				await sleep(500);
			}
		}
		return ((after - before) * 1000) / requests;
	}
	const kinds = {
		request: () => measure(() => "/health"),
		d1x1: () => measure(() => "/d1?n=1"),
		d1x5: () => measure(() => "/d1?n=5"),
		d1batchx1: () => measure(() => "/d1batch?n=1"),
		d1batchx21: () => measure(() => "/d1batch?n=21"),
		callx1: () => measure(() => "/rpc?n=1&name=warm"),
		callx5: () => measure(() => "/rpc?n=5&name=warm"),
		newObject: () => measure(() => `/rpc?n=1&name=new-${++unique}`),
		writeWarm: () => measure(() => "/write?name=warm"),
		writeNew: () => measure(() => `/write?name=new-${++unique}`),
		statementsx1: () => measure(() => "/statements?n=1&name=warm"),
		statementsx21: () => measure(() => "/statements?n=21&name=warm"),
		rowsx1: () => measure(() => "/rows?n=1&name=warm"),
		rowsx21: () => measure(() => "/rows?n=21&name=warm"),
		d1rowsx1: () => measure(() => "/d1rows?n=1"),
		d1rowsx21: () => measure(() => "/d1rows?n=21"),
		turnsx1: () => measure(() => "/turns?n=1&name=warm"),
		turnsx2: () => measure(() => "/turns?n=2&name=warm"),
		queue: () => measure(() => "/queue?name=warm", { drain: true }),
		queueAck: () => measure(() => "/queue?name=warm&ack=1", { drain: true }),
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
		for (const path of [
			"/health",
			"/d1?n=5",
			"/write?name=warm",
			"/statements?n=21&name=warm",
			"/rows?n=21&name=warm",
			"/d1rows?n=21",
			"/turns?n=2&name=warm",
			"/queue?name=warm&ack=1",
		]) {
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
		// Each part is priced within each round, from kinds measured a few seconds apart, and the part's price is the
		// median of its rounds: a machine that drifts between rounds (another process, a CPU's clock) moves both sides
		// of a round's difference alike, where a difference of medians taken from different rounds did not cancel it
		// (the same conversion's floor read 16.37 and 20.57 ms in two quiet runs of 2026-11-27 with three rounds).
		const byRound = Array.from({ length: rounds }, (_, r) =>
			priced(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v[r]]))),
		);
		const parts = Object.fromEntries(
			Object.entries(priced(m)).map(([k, [label]]) => [k, [label, median(byRound.map((round) => round[k][1]))]]),
		);
		const msOf = (ps) => Object.fromEntries(Object.entries(ps).map(([k, [, v]]) => [k, v]));
		return { m, parts, ms: msOf(parts), rounds: byRound.map(msOf) };
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
		const at = (d1) => round(conversionFloor(ms, assumedShape({ ...shape, d1 })));
		console.log(`  ${label} ${at(4)} / ${at(2)}`);
	}
}
