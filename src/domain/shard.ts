/**
 * Which D1 shard holds a record (issue 50, docs/scaling.md "Past one
 * database"): a fixed hash of (app, key) modulo the deployment's shard
 * count. Pure, so the Worker, the scripts' copy of its name and the tests
 * agree; the name and the count are recorded in the control database's
 * `shard_directory` by `npm run migrate`, which refuses a deploy whose count
 * differs (a changed count or hash would send every key to another shard).
 *
 * The hash is FNV-1a (32 bit) of the UTF-8 bytes of `appid`, a 0 byte, and
 * `key` (the separator keeps ("ab", "c") and ("a", "bc") apart), finished
 * with murmur3's fmix32. The finisher is needed: FNV-1a multiplies modulo
 * 2^32, so the low k bits of its result depend only on the low k bits of each
 * byte, and with a power-of-two count (4, 32) keys that differ only in higher
 * bits of a byte always share a shard ("user-a", "user-e", "user-i" ... all
 * on one of 4; "codea" and "codeA" on one of 32). fmix32 folds the high bits
 * down. The EventGate design of issue 49 uses the same FNV-1a over (appid,
 * customid).
 */

/** The hash's name as recorded in `shard_directory.hash`; never change it for a deployed directory. */
export const SHARD_HASH = "fnv1a32-fmix32";

const encoder = new TextEncoder();

/** FNV-1a 32 over the bytes of `appid`, 0, `key`, then fmix32; an unsigned 32-bit integer. */
export function shardHash(appid: string, key: string): number {
	let hash = 0x811c9dc5;
	const mix = (byte: number) => {
		hash ^= byte;
		hash = Math.imul(hash, 0x01000193);
	};
	for (const byte of encoder.encode(appid)) mix(byte);
	mix(0);
	for (const byte of encoder.encode(key)) mix(byte);
	// murmur3 fmix32: every input bit reaches every output bit.
	hash ^= hash >>> 16;
	hash = Math.imul(hash, 0x85ebca6b);
	hash ^= hash >>> 13;
	hash = Math.imul(hash, 0xc2b2ae35);
	hash ^= hash >>> 16;
	return hash >>> 0;
}

/** The shard (0 to count - 1) of (appid, key) among `count` shards. */
export function shardIndex(count: number, appid: string, key: string): number {
	if (!Number.isInteger(count) || count < 1) throw new RangeError(`shard count must be a positive integer, got ${count}`);
	return shardHash(appid, key) % count;
}

/** The binding name of shard `index` in wrangler.toml (`SHARD_0` ... `SHARD_<count - 1>`). */
export function shardBinding(index: number): string {
	return `SHARD_${index}`;
}
