import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { everyShard } from "../../src/db/shards";
import { ledgerFor } from "../../src/ledger/stub";

/**
 * Records every SQL statement the service's own code sends: D1 statements
 * (`prepare` on the D1 binding and on its sessions) and the UserLedger's
 * statements on its SQLite (`exec` on SqlStorage). The prototypes are patched,
 * so every binding object and every ledger in this isolate is seen (the
 * Worker, the queue consumer, the scheduled handler and the Durable Objects
 * all run in the test's isolate). Only statements whose caller is a file
 * under src/ are kept: the tests' own fixture and check queries are not the
 * service's.
 */

/** Where a statement ran: the control database (`d1`), a D1 shard (`shard`, issue 50: explained against the shard schema), a ledger, or an EventGate object (`gate`, src/ledger/event-gate.ts, whose SQLite has its own schema). */
export type Engine = "d1" | "shard" | "ledger" | "gate";

export interface Recorded {
	engine: Engine;
	sql: string;
	/** The src/ file that sent it, e.g. "src/db/users.ts". */
	file: string;
	/** Parameters it was sent with, up to SAMPLES distinct sets (none when it was never bound or had none). */
	params?: unknown[][];
}

/** Distinct parameter sets kept per statement: each is explained, so the guard plans with what the service sent. */
const SAMPLES = 2;

/** Distinct statements by engine, file and text (one text may be sent from two files). */
const recorded = new Map<string, Recorded>();

/** True while `unrecorded` runs: what the guard itself writes (a seeded ledger) is not the tour's. */
let paused = false;

/** The src/ file of the first frame of the stack that is not this file or the runtime; null for test code. */
function callerFile(): string | null {
	const frames = (new Error().stack ?? "").split("\n").slice(1);
	for (const frame of frames) {
		const match = /\/((?:src|test)\/[\w./-]+\.tsx?):\d+:\d+/.exec(frame);
		// The read-retrying wrapper of the D1 binding (http/service-busy.ts) prepares on behalf of its caller.
		if (!match?.[1] || match[1].endsWith("query-plan/recorder.ts") || match[1] === "src/instrument/d1-availability.ts") continue;
		return match[1].startsWith("src/") ? match[1] : null;
	}
	return null;
}

/**
 * The D1 databases by binding object: every shard binding (and each session
 * made from one) is a shard, anything else the control database. The binding
 * objects are the same in the Worker, its queue consumers and the Durable
 * Objects of the test's isolate; the service's wrappers call the binding's own
 * `prepare` with the binding as `this`.
 */
const shardDatabases = new WeakSet<object>();

function engineOf(database: unknown, engine: Engine): Engine {
	return engine === "d1" && typeof database === "object" && database !== null && shardDatabases.has(database) ? "shard" : engine;
}

/** A parameter set's identity: the same values (bytes by their length) are one sample. */
const sampleKey = (params: unknown[]) =>
	JSON.stringify(params, (_k, v: unknown) => (v instanceof ArrayBuffer || ArrayBuffer.isView(v) ? `bytes:${v.byteLength}` : v));

/** Keeps `params` as one of the statement's samples (the first SAMPLES distinct sets). */
function sample(entry: Recorded, params: unknown[]): void {
	if (params.length === 0) return;
	entry.params ??= [];
	if (entry.params.length >= SAMPLES) return;
	const key = sampleKey(params);
	if (!entry.params.some((p) => sampleKey(p) === key)) entry.params.push(params);
}

/** Records a statement (and, for a ledger's exec, its arguments); returns its entry, or null for test code. */
function record(engine: Engine, sql: unknown, params: unknown[] = []): Recorded | null {
	if (typeof sql !== "string" || paused) return null;
	const file = callerFile();
	const on: Engine = engine === "ledger" && file === "src/ledger/event-gate.ts" ? "gate" : engine;
	if (!file) return null;
	const key = `${on}\n${file}\n${sql}`;
	const entry = recorded.get(key) ?? { engine: on, sql, file };
	recorded.set(key, entry);
	sample(entry, params);
	return entry;
}

/** The recorded entry of each D1 prepared statement, so its `bind` adds the parameters to it. */
const preparedEntries = new WeakMap<object, Recorded>();

type Patchable = Record<string, (this: unknown, ...args: unknown[]) => unknown>;

function patch(proto: Patchable, method: string, engine: Engine): void {
	const original = proto[method];
	if (!original || (original as { recording?: boolean }).recording) return;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		// A ledger's exec takes its parameters with the text; a D1 statement gets them from `bind` (patchBind).
		const entry = record(engineOf(this, engine), args[0], engine === "ledger" ? args.slice(1) : []);
		const result = original.apply(this, args);
		if (entry && engine === "d1" && typeof result === "object" && result !== null) preparedEntries.set(result, entry);
		return result;
	};
	Object.assign(wrapped, { recording: true });
	proto[method] = wrapped;
}

/** Adds a D1 statement's bound parameters to its entry (the prepared statement's prototype, patched once). */
function patchBind(proto: Record<string, unknown>): void {
	const original = proto.bind;
	if (typeof original !== "function" || (original as { recording?: boolean }).recording) return;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		const entry = typeof this === "object" && this !== null ? preparedEntries.get(this) : undefined;
		if (entry) sample(entry, args);
		return original.apply(this, args);
	};
	Object.assign(wrapped, { recording: true });
	proto.bind = wrapped;
}

/** A session made from a shard is a shard too (the prototype's withSession, patched once). */
function tagSessions(proto: Record<string, unknown>): void {
	const original = proto.withSession;
	if (typeof original !== "function" || (original as { tagging?: boolean }).tagging) return;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		const session: unknown = original.apply(this, args);
		if (typeof this === "object" && this !== null && shardDatabases.has(this) && typeof session === "object" && session !== null)
			shardDatabases.add(session);
		return session;
	};
	Object.assign(wrapped, { tagging: true });
	proto.withSession = wrapped;
}

/** Runs `fn` without recording its statements (the guard runs one thing at a time). */
export async function unrecorded(fn: () => void | Promise<void>): Promise<void> {
	paused = true;
	try {
		await fn();
	} finally {
		paused = false;
	}
}

/** Starts recording (idempotent). Creates one scratch ledger to reach SqlStorage's prototype. */
export async function startRecording(): Promise<void> {
	for (const shard of everyShard(env)) shardDatabases.add(shard);
	tagSessions(Object.getPrototypeOf(env.DB));
	patch(Object.getPrototypeOf(env.DB), "prepare", "d1");
	patch(Object.getPrototypeOf(env.DB.withSession()), "prepare", "d1");
	patchBind(Object.getPrototypeOf(env.DB.prepare("SELECT 1")));
	patchBind(Object.getPrototypeOf(env.DB.withSession().prepare("SELECT 1")));
	await runInDurableObject(ledgerFor(env, "plan-probe", "recorder"), async (_instance, state) => {
		patch(Object.getPrototypeOf(state.storage.sql), "exec", "ledger");
	});
}

/** What was recorded so far. */
export const recordedStatements = (): Recorded[] => [...recorded.values()];
