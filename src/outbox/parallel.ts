/**
 * How a consumer batch's attempts share the invocation's outgoing connections.
 *
 * A Worker invocation has at most six outgoing connections waiting for their
 * response headers; a seventh `fetch` waits in the platform's queue until one
 * of them gets its headers (developers.cloudflare.com/workers/platform/limits/,
 * "Simultaneous open connections"). `wrangler dev` does not enforce it. A
 * delivery's timeout (`AbortSignal.timeout`, deliver.ts) starts when `fetch`
 * is called, so with every message of a batch started at once, a healthy
 * endpoint's delivery could wait behind six hanging ones and time out as if it
 * had failed itself (and count towards its own breaker). So the consumer runs
 * at most MAX_PARALLEL_ATTEMPTS attempts at a time (each fetch starts only with
 * a free connection), and in an order that takes one message of each app in
 * turn, so one app's messages never fill every slot ahead of another app's.
 */

/** Attempts in flight at once: one under the platform's six, left for the log write and the outbox sweep. */
export const MAX_PARALLEL_ATTEMPTS = 5;

/**
 * Reorders `items` so that groups (by `keyOf`) take turns: the first item of
 * each group in order of first appearance, then the second of each, and so
 * on. Items of one group keep their order.
 */
export function interleaveByKey<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
	const groups = new Map<string, T[]>();
	for (const item of items) {
		const key = keyOf(item);
		const group = groups.get(key);
		if (group) group.push(item);
		else groups.set(key, [item]);
	}
	const lists = [...groups.values()];
	const out: T[] = [];
	for (let round = 0; out.length < items.length; round++) {
		for (const list of lists) if (round < list.length) out.push(list[round]!);
	}
	return out;
}

/**
 * Starts `fn` on every item, at most `limit` at a time, in order, and
 * answers each item's promise (settled when its `fn` has), so a caller can
 * stop waiting for some items while the others go on (the consumer's
 * detached attempts, detach.ts). `fn` must not reject (the consumer's attempts catch
 * their own errors); a rejection rejects that item's promise only.
 */
export function startLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void>[] {
	const settlers: { resolve: () => void; reject: (err: unknown) => void }[] = [];
	const finished = items.map(() => new Promise<void>((resolve, reject) => settlers.push({ resolve, reject })));
	let next = 0;
	const lane = async () => {
		while (next < items.length) {
			const i = next++;
			try {
				await fn(items[i]!);
				settlers[i]!.resolve();
			} catch (err) {
				settlers[i]!.reject(err);
			}
		}
	};
	for (let l = 0; l < Math.min(Math.max(1, limit), items.length); l++) void lane();
	return finished;
}

/** startLimited, waiting for every item; resolves when all have finished. */
export async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
	await Promise.all(startLimited(items, limit, fn));
}
