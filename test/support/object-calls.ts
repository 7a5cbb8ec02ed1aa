import { EventGate } from "../../src/ledger/event-gate";
import { UserLedger } from "../../src/ledger/user-ledger";

/**
 * Counts the calls every UserLedger and EventGate object receives, by whom
 * they are made (the Worker, another ledger, the projection's consumer): a
 * conversion's object calls, load-free (issue 49, "one call fewer"). The
 * objects run in the tests' isolate (@cloudflare/vitest-plugin), so their
 * classes' prototypes are the ones wrapped here. Each call is kept as
 * `kind.method` with the object's name; `stop()` puts the methods back.
 */
export interface ObjectCall {
	kind: "ledger" | "gate";
	method: string;
	/** The object's name (`appid:userkey` for a ledger, `gate-<n>` for a gate). */
	name: string;
}

/** Calls a consumer or a schedule makes in the background, not a request's path: left out of the counts. */
const BACKGROUND = new Set(["projectionWritten", "alarm", "flush", "pendingBefore", "settle"]);
/** The classes' private helpers, which only the object itself calls (also after an await, so not caught by `inside`). */
const PRIVATE = new Set(["checkIdentity", "read", "fromD1", "insert", "redactOne"]);

export function countObjectCalls(): { calls: ObjectCall[]; take: () => ObjectCall[]; stop: () => void } {
	const calls: ObjectCall[] = [];
	// An object's calls of its own methods (claim's peek) run inside the call that made them: not counted.
	const inside = new WeakMap<object, number>();
	const restores: (() => void)[] = [];
	for (const [kind, proto] of [
		["ledger", UserLedger.prototype],
		["gate", EventGate.prototype],
	] as const) {
		for (const method of Object.getOwnPropertyNames(proto)) {
			if (method === "constructor" || BACKGROUND.has(method) || PRIVATE.has(method)) continue;
			const descriptor = Object.getOwnPropertyDescriptor(proto, method);
			const original = descriptor?.value;
			if (!descriptor || typeof original !== "function") continue;
			Object.defineProperty(proto, method, {
				...descriptor,
				value: function (this: { ctx: DurableObjectState }, ...args: unknown[]) {
					const depth = inside.get(this) ?? 0;
					if (depth === 0) calls.push({ kind, method, name: this.ctx.id.name ?? "" });
					inside.set(this, depth + 1);
					try {
						return original.apply(this, args);
					} finally {
						inside.set(this, depth);
					}
				},
			});
			restores.push(() => Object.defineProperty(proto, method, descriptor));
		}
	}
	return {
		calls,
		take: () => calls.splice(0, calls.length),
		stop: () => {
			for (const restore of restores) restore();
		},
	};
}
