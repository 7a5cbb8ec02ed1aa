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
}

/** Distinct statements by engine, file and text (one text may be sent from two files). */
const recorded = new Map<string, Recorded>();

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

function record(engine: Engine, sql: unknown): void {
	if (typeof sql !== "string") return;
	const file = callerFile();
	const on: Engine = engine === "ledger" && file === "src/ledger/event-gate.ts" ? "gate" : engine;
	if (file) recorded.set(`${on}\n${file}\n${sql}`, { engine: on, sql, file });
}

type Patchable = Record<string, (this: unknown, ...args: unknown[]) => unknown>;

function patch(proto: Patchable, method: string, engine: Engine): void {
	const original = proto[method];
	if (!original || (original as { recording?: boolean }).recording) return;
	const wrapped = function (this: unknown, ...args: unknown[]) {
		record(engineOf(this, engine), args[0]);
		return original.apply(this, args);
	};
	Object.assign(wrapped, { recording: true });
	proto[method] = wrapped;
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

/** Starts recording (idempotent). Creates one scratch ledger to reach SqlStorage's prototype. */
export async function startRecording(): Promise<void> {
	for (const shard of everyShard(env)) shardDatabases.add(shard);
	tagSessions(Object.getPrototypeOf(env.DB));
	patch(Object.getPrototypeOf(env.DB), "prepare", "d1");
	patch(Object.getPrototypeOf(env.DB.withSession()), "prepare", "d1");
	await runInDurableObject(ledgerFor(env, "plan-probe", "recorder"), async (_instance, state) => {
		patch(Object.getPrototypeOf(state.storage.sql), "exec", "ledger");
	});
}

/** What was recorded so far. */
export const recordedStatements = (): Recorded[] => [...recorded.values()];
