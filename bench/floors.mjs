// `node bench/floors.mjs`: what the platform itself costs under `wrangler dev`,
// in workerd CPU per request, with nothing of the service around it (the
// fixture in bench/floors/): an HTTP request, a D1 round trip, a Durable
// Object call, a new object, the ledger's schema, a waking object, a write
// transaction, a SQL statement, a row written (in D1 and in an object), a
// rate limiter call, an object's alarm written. Each is the difference
// between two kinds of request that differ in that one thing, measured over BENCH_FLOOR_REQUESTS
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
import { median } from "./stats.mjs";

/** workerd evicts a Durable Object after 10 s without a request (see run.mjs); a second more. */
const EVICTED_AFTER_MS = 11_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
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
		// Every authenticated operation asks the app's rate limiter once (src/http/rate-limits.ts).
		limiters: parts.limiterCalls ?? 0,
		// A ledger's flush backstop set after a write, and deleted once the flush was acknowledged (flush-schedule.ts).
		alarms: parts.ledgerAlarms ?? 0,
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
		// Clamped together: the schema is priced less the object's creation, so a creation measured below zero is in it.
		c.created * Math.max(0, (ms.newObject ?? 0) + (ms.schema ?? 0)) +
		c.woken * p("woken") +
		c.messages * p("queueMessage") +
		(c.d1Rows ?? 0) * p("d1Row") +
		(c.rows ?? 0) * p("row") +
		(c.limiters ?? 0) * p("limiter") +
		(c.alarms ?? 0) * p("alarm")
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
		d1Statement: ["further D1 statement in a batch (SELECT ?)", (m.d1batchx41 - m.d1batchx1) / 40],
		// A call to one more object (as a conversion calls the friend's ledger, and that ledger the referrer's): priced
		// over 5 calls, where the one call of a request less the request alone was a difference lost in the noise.
		firstCall: ["call to a Durable Object (one more object)", (m.objectsx6 - m.callx1) / 5],
		call: ["further call to the same object", (m.callx5 - m.callx1) / 4],
		newObject: ["new object (created by its first call)", m.newObject - m.callx1],
		// A new ledger's creation and schema priced over 6 (a write to each of 6 new objects against 6 warm ones), less
		// the object's own creation: where one new object's write less a warm one was a difference lost in the noise.
		schema: ["ledger schema (one script) on a new object", (m.writesNewx6 - m.writesWarmx6) / 6 - (m.newObject - m.callx1)],
		woken: ["waking an evicted object (with the ledger schema)", m.writeWoken - m.writeWarm],
		turn: ["write transaction in a later turn (commit)", (m.turnsx11 - m.waitsx11) / 10],
		statement: ["SQL statement on the object's SQLite", (m.statementsx41 - m.statementsx1) / 40],
		row: ["row written on the object's SQLite (one INSERT of many)", (m.rowsx21 - m.rowsx1) / 20],
		d1Row: ["row written in D1 (one INSERT of many)", (m.d1rowsx41 - m.d1rowsx1) / 40],
		queueMessage: ["queue message from an object (send, consumer's share)", (m.queuex6 - m.queue) / 5],
		limiter: ["rate limiter call (the Rate Limiting binding)", (m.limitx6 - m.limitx1) / 5],
		ackCall: ["consumer's call back to the message's object", (m.queueAckx6 - m.queuex6) / 6],
		alarm: ["an object's alarm set or deleted (a storage write)", (m.alarmsx11 - m.waitsx11) / 10],
		// As priced before 07:00 UTC on 2026-11-27 (a single difference), beside the new price in the log, so the change shows.
		firstCallOne: ["first call of a request less the request alone", m.callx1 - m.request],
	};
}

/** The kinds of request the fixture is measured by, in the order a plain run measures them (writeWoken apart). */
const KINDS = {
	request: () => "/health",
	d1x1: () => "/d1?n=1",
	d1x5: () => "/d1?n=5",
	d1batchx1: () => "/d1batch?n=1",
	d1batchx41: () => "/d1batch?n=41",
	limitx1: () => "/limit?n=1",
	limitx6: () => "/limit?n=6",
	callx1: () => "/rpc?n=1&name=warm",
	callx5: () => "/rpc?n=5&name=warm",
	objectsx6: () => "/objects?n=6",
	newObject: (fresh) => `/rpc?n=1&name=${fresh()}`,
	writeWarm: () => "/write?name=warm",
	writesWarmx6: () => "/writes?n=6&name=warm",
	writesNewx6: (fresh) => `/writes?n=6&name=${fresh()}`,
	statementsx1: () => "/statements?n=1&name=warm",
	statementsx41: () => "/statements?n=41&name=warm",
	rowsx1: () => "/rows?n=1&name=warm",
	rowsx21: () => "/rows?n=21&name=warm",
	d1rowsx1: () => "/d1rows?n=1",
	d1rowsx41: () => "/d1rows?n=41",
	waitsx11: () => "/turns?n=11&name=warm&commit=0",
	turnsx11: () => "/turns?n=11&name=warm",
	alarmsx11: () => "/alarms?n=11&name=warm",
	queue: () => "/queue?name=warm",
	queuex6: () => "/queue?n=6&name=warm",
	queueAck: () => "/queue?name=warm&ack=1",
	queueAckx6: () => "/queue?n=6&name=warm&ack=1",
};
/** Kinds whose CPU includes the fixture's queue consumer: read once it has taken every message. */
const DRAINED = new Set(["queue", "queuex6", "queueAck", "queueAckx6"]);

/**
 * Starts the fixture in bench/floors/ (its own `wrangler dev`) and answers
 * how to measure it one kind at a time: `measure(kind)` is workerd CPU ms per
 * request of `requests` requests, `connections` at a time; `prepareWoken()`
 * writes to `requests` new objects and answers the measure of writing to them
 * again once workerd has evicted them. Used whole by measureFloors, and kind by
 * kind between a scenario's bursts by bench/floor-ratio.mjs.
 */
export async function startFloors({
	requests = Number(process.env.BENCH_FLOOR_REQUESTS || 400),
	/** Requests in flight at once, as the bench's 16 connections (BENCH_FLOOR_CONNECTIONS=1: one after another). */
	connections = Number(process.env.BENCH_FLOOR_CONNECTIONS || 16),
	persistBase = process.env.BENCH_PERSIST_BASE || undefined,
} = {}) {
	const service = await startService({ name: "floors", args: ["--config", "bench/floors/wrangler.toml"], persistBase });
	const workerdCpu = () => service.cpuByProcess().workerd ?? 0;
	const get = async (path) => {
		const res = await fetch(`${service.base}${path}`);
		if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
		await res.arrayBuffer();
	};
	let unique = 0;
	const fresh = () => `new-${++unique}`;
	/** The fixture's queue counts: messages sent, and consumed by its consumer. */
	const queued = async () => (await fetch(`${service.base}/queued`)).json();
	/**
	 * workerd CPU ms per request of `requests` requests, `connections` at a time; `path(i)` gives request i's path.
	 * With `drain`, the CPU is read once the queue consumer has taken every message sent (the batch's second to
	 * fill, then every half second: each look is a request, 1 in `requests`, left in).
	 */
	/** Waits until the fixture's consumer has taken every message sent (looks every half second); answers the CPU then. */
	async function drained() {
		for (let looks = 0; ; looks++) {
			const cpu = workerdCpu();
			const q = await queued();
			if (q.consumed >= q.sent) return cpu;
			if (looks > 60) throw new Error(`the floors' queue consumer did not take its messages: ${JSON.stringify(q)}`);
			await sleep(500);
		}
	}
	async function measure(path, { drain = false, warm = true } = {}) {
		// One request first, unmeasured: an object of the kind idle for 10 s (a round between bursts of the service)
		// would otherwise be woken inside the measure; its messages, if any, consumed before the measure starts.
		if (warm) await get(path(-1));
		if (warm && drain) await sleep(1200).then(drained);
		await sleep(300); // let the previous kind's background work end
		const before = workerdCpu();
		let next = 0;
		const connection = async () => {
			while (next < requests) await get(path(next++));
		};
		await Promise.all(Array.from({ length: connections }, connection));
		let after = workerdCpu();
		if (drain) after = await sleep(1200).then(drained);
		return ((after - before) * 1000) / requests;
	}
	return {
		kinds: Object.keys(KINDS),
		measure: (kind) => measure(() => KINDS[kind](fresh), { drain: DRAINED.has(kind) }),
		/** workerd CPU ms per request of one path of the fixture, measured as a kind is (an experiment's own kind). */
		measurePath: (path) => measure(() => path),
		async prepareWoken() {
			const names = Array.from({ length: requests }, () => `woken-${++unique}`);
			for (const name of names) await get(`/write?name=${name}`);
			const written = Date.now();
			return async () => {
				await sleep(written + EVICTED_AFTER_MS - Date.now());
				return measure((i) => `/write?name=${names[i]}`, { warm: false });
			};
		},
		/** The isolate, the warm object and its schema, D1. */
		async warmUp() {
			for (const path of [
				"/health",
				"/d1?n=5",
				"/limit?n=6",
				"/write?name=warm",
				"/writes?n=6&name=warm",
				"/statements?n=41&name=warm",
				"/rows?n=21&name=warm",
				"/d1rows?n=41",
				"/objects?n=6",
				"/turns?n=11&name=warm",
				"/queue?n=6&name=warm&ack=1",
			]) {
				for (let i = 0; i < 20; i++) await get(path);
			}
		},
		stop: () => service.stop(),
	};
}

/**
 * The parts priced from kinds measured in rounds (`samples`: each kind's ms per request, one per round): each part
 * is priced within each round, from kinds measured a few seconds apart, and the part's price is the median of its
 * rounds: a machine that drifts between rounds (another process, a CPU's clock) moves both sides of a round's
 * difference alike, where a difference of medians taken from different rounds did not cancel it (the same
 * conversion's floor read 16.37 and 20.57 ms in two quiet runs of 2026-11-27 with three rounds). Answers the parts
 * with their labels, the raw medians (`m`), and each round's own prices (`rounds`).
 */
export function priceRounds(samples) {
	const rounds = Math.min(...Object.values(samples).map((v) => v.length));
	const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
	const byRound = Array.from({ length: rounds }, (_, r) => priced(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v[r]]))));
	const parts = Object.fromEntries(
		Object.entries(priced(m)).map(([k, [label]]) => [k, [label, median(byRound.map((round) => round[k][1]))]]),
	);
	const msOf = (ps) => Object.fromEntries(Object.entries(ps).map(([k, [, v]]) => [k, v]));
	return { m, parts, ms: msOf(parts), rounds: byRound.map(msOf) };
}

/**
 * Measures the platform's parts under `wrangler dev` on the fixture in
 * bench/floors/ (its own service, started and stopped here), every kind in
 * turn, `rounds` times, and prices them (priceRounds).
 */
export async function measureFloors({
	rounds = Number(process.env.BENCH_FLOOR_ROUNDS || 3),
	log = (...args) => console.log(`[floors ${new Date().toISOString().slice(11, 19)}]`, ...args),
	...options
} = {}) {
	const floors = await startFloors(options);
	try {
		const samples = Object.fromEntries([...floors.kinds, "writeWoken"].map((k) => [k, []]));
		await floors.warmUp();
		for (let r = 0; r < rounds; r++) {
			for (const kind of floors.kinds) samples[kind].push(await floors.measure(kind));
			samples.writeWoken.push(await (await floors.prepareWoken())());
			log(
				`round ${r + 1} of ${rounds}:`,
				JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, round(v.at(-1))]))),
			);
		}
		return priceRounds(samples);
	} finally {
		await floors.stop();
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
