/**
 * The bench's count of the platform parts a request's work is made of
 * (bench/floors.mjs prices each part; bench/README.md, "Floors"): ledgers
 * started and created, their write transactions and SQL statements, Durable
 * Object calls, their alarms set and deleted, queue messages sent and the
 * consumer batches that took them, and rate limiter calls.
 * Read through `GET /__metrics/d1` with the D1 counts, and like them only
 * with the `D1_QUERY_COUNT` flag (src/instrument/d1-metrics.ts): the
 * counters here are plain integers, whose increments cost nothing
 * measurable when nobody reads them.
 */
const parts = {
	/** UserLedger objects constructed: created, woken after eviction, or started by a read. */
	ledgerStarts: 0,
	/** Ledgers that got their tables (the schema script): a new object's first write. */
	ledgersCreated: 0,
	/** Synchronous storage transactions of the ledgers (each a commit). */
	ledgerTransactions: 0,
	/** `sql.exec` calls of the ledgers (a script is one). */
	ledgerStatements: 0,
	/** `setAlarm` and `deleteAlarm` calls of the ledgers (each a write of the object's stored alarm). */
	ledgerAlarms: 0,
	/** `send`/`sendBatch` calls on the projection queue, and the messages in them. */
	projectionSends: 0,
	projectionMessages: 0,
	/** Messages sent to the outbox queue (webhooks and emails), by whoever sends them (issue 49: queue messages per conversion). */
	outboxMessages: 0,
	/** Batches the projection queue's consumer was invoked with, and their messages. */
	projectionBatches: 0,
	projectionBatchMessages: 0,
	/** `limit` calls on the Workers Rate Limiting bindings (every authenticated operation makes one). */
	limiterCalls: 0,
	/** Calls to the EventGate objects (issue 49: a conversion's claim), by whoever makes them; the ledgers' are per source in d1-metrics.ts. */
	gateCalls: 0,
};

export type PlatformPart = keyof typeof parts;

/** Adds `n` to a part's count. */
export function countPart(part: PlatformPart, n = 1): void {
	parts[part] += n;
}

/** The running counts (the bench subtracts two readings). */
export function platformParts(): Record<PlatformPart, number> {
	return { ...parts };
}

/** Wraps a queue producer binding so that its sends and their messages are counted as the projection's. */
export function countingProjectionQueue<T>(queue: Queue<T>): Queue<T> {
	return countingQueue(queue, "projectionSends", "projectionMessages");
}

/** Wraps a Durable Object namespace so that every call on a stub it hands out counts one `part`. */
export function countingObjects<T extends DurableObjectNamespace<any>>(namespace: T, part: PlatformPart): T {
	const counted = (stub: object) =>
		new Proxy(stub, {
			get(target, prop) {
				const value = Reflect.get(target, prop);
				if (typeof value !== "function" || typeof prop !== "string" || prop === "then") return value;
				return (...args: unknown[]) => {
					countPart(part);
					return Reflect.apply(value, target, args);
				};
			},
		});
	return new Proxy(namespace, {
		get(target, prop) {
			const value = Reflect.get(target, prop);
			if (typeof value !== "function") return value;
			if (prop === "get" || prop === "getByName") return (...args: unknown[]) => counted(Reflect.apply(value, target, args));
			return value.bind(target);
		},
	});
}

/** Wraps the outbox queue's producer binding so that its messages are counted. */
export function countingOutboxQueue<T>(queue: Queue<T>): Queue<T> {
	return countingQueue(queue, null, "outboxMessages");
}

function countingQueue<T>(queue: Queue<T>, sendsPart: PlatformPart | null, messagesPart: PlatformPart): Queue<T> {
	return new Proxy(queue, {
		get(target, prop) {
			const value = Reflect.get(target, prop);
			if (typeof value !== "function") return value;
			if (prop === "sendBatch") {
				return (messages: Iterable<MessageSendRequest<T>>, options?: QueueSendBatchOptions) => {
					const list = [...messages];
					if (sendsPart) countPart(sendsPart);
					countPart(messagesPart, list.length);
					return target.sendBatch(list, options);
				};
			}
			if (prop === "send") {
				return (body: T, options?: QueueSendOptions) => {
					if (sendsPart) countPart(sendsPart);
					countPart(messagesPart);
					return target.send(body, options);
				};
			}
			return value.bind(target);
		},
	});
}

/** Wraps a Rate Limiting binding so that its `limit` calls are counted. */
export function countingLimiter(limiter: RateLimit): RateLimit {
	return {
		limit: (options) => {
			countPart("limiterCalls");
			return limiter.limit(options);
		},
	};
}
