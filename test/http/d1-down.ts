/**
 * A D1 binding that goes down at its Nth round trip (a batch is one) and
 * stays down: that call and every later one throw D1's own error text, as
 * when the database's queue is full (Cloudflare D1, "Error list"). For the
 * service-busy tests: the Nth statement of an operation fails, and its one
 * retry of a read fails too.
 */
export const OVERLOADED = "D1_ERROR: D1 DB is overloaded. Requests queued for too long.";

export interface DownD1 {
	db: D1Database;
	/** Round trips attempted so far (failed ones included). */
	readonly calls: number;
	/** True once a round trip failed. */
	readonly fired: boolean;
}

/** `times`: how many round trips fail from the Nth on (all of them by default: D1 stays down). */
export function d1DownFrom(db: D1Database, n: number, times = Number.POSITIVE_INFINITY, message = OVERLOADED): DownD1 {
	let calls = 0;
	let fired = false;
	const real = new WeakMap<object, D1PreparedStatement>();
	const trip = <T>(run: () => Promise<T>): Promise<T> => {
		calls++;
		if (calls >= n && calls < n + times) {
			fired = true;
			return Promise.reject(new Error(message));
		}
		return run();
	};
	const own = (target: object, prop: string | symbol) => {
		const value = Reflect.get(target, prop);
		return typeof value === "function" ? value.bind(target) : value;
	};
	const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
				if (typeof prop === "string" && ["first", "run", "all", "raw"].includes(prop)) {
					const method = own(target, prop) as (...args: unknown[]) => Promise<unknown>;
					return (...args: unknown[]) => trip(() => method(...args));
				}
				return own(target, prop);
			},
		});
		real.set(proxy, statement);
		return proxy;
	};
	const wrapDb = (target: D1Database): D1Database =>
		new Proxy(target, {
			get(t, prop) {
				if (prop === "prepare") return (sql: string) => wrap(t.prepare(sql));
				if (prop === "batch") return (statements: D1PreparedStatement[]) => trip(() => t.batch(statements.map((s) => real.get(s) ?? s)));
				if (prop === "exec") return (sql: string) => trip(() => t.exec(sql));
				if (prop === "withSession") return (constraint?: string) => wrapDb(t.withSession(constraint) as unknown as D1Database);
				return own(t, prop);
			},
		});
	return {
		db: wrapDb(db),
		get calls() {
			return calls;
		},
		get fired() {
			return fired;
		},
	};
}
