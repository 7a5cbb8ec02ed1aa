/**
 * Which `EventGate` object holds the (app, customid) claim of a conversion
 * event (issue 49, docs/scaling.md "Conversions without D1"): FNV-1a (32 bit)
 * of `appid + "\u0000" + customid`, modulo EVENT_GATE_SHARDS.
 *
 * Both are fixed FOREVER: a customid must always meet the same object, or
 * two calls of one customid could each claim it in a different gate. A
 * deployment that needs more than 64 x ~1,000 claims/s needs a new gate
 * namespace with a migration of its rows, not a new number here.
 */
export const EVENT_GATE_SHARDS = 64;

const utf8 = new TextEncoder();

/** FNV-1a, 32 bit, over the UTF-8 bytes of `text` (the standard function: any language computes the same shard). */
export function fnv1a32(text: string): number {
	let hash = 0x811c9dc5;
	for (const byte of utf8.encode(text)) hash = Math.imul(hash ^ byte, 0x01000193);
	return hash >>> 0;
}

/** The shard (0..EVENT_GATE_SHARDS-1) of the event `customid` of app `appid`. */
export const gateShard = (appid: string, customid: string): number => fnv1a32(`${appid}\u0000${customid}`) % EVENT_GATE_SHARDS;

/** The name of shard `n`'s object: `gate-<n>`. */
export const gateName = (shard: number): string => `gate-${shard}`;
