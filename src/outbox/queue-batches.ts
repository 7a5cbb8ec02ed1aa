/**
 * Cloudflare Queues limits (developers.cloudflare.com/queues/platform/limits/):
 * a `sendBatch` takes at most 100 messages and 256 KB in all, and a message
 * is at most 128 KB. A batch over either limit is refused as a whole, so a
 * producer that sends whatever it has in one call can fail on every retry
 * (issue 20 item 3). Messages are sent with `contentType: "json"`, so their
 * size is the UTF-8 length of their JSON, which is what is measured here.
 */

/** At most this many messages per `sendBatch` (the platform's limit). */
export const QUEUE_BATCH_MESSAGES = 100;
/**
 * Bytes of message bodies per `sendBatch`: the platform's 256 KB less room
 * for what it adds to each message (id, timestamps, content type).
 */
export const QUEUE_BATCH_BYTES = 224_000;
/**
 * A message carries its event only up to this size (half the platform's
 * 128 KB per message); a larger event travels by id and the consumer reads it
 * from D1 (`outbox_events.payload`), so no event is ever too large to send.
 */
export const CARRIED_MESSAGE_BYTES = 64_000;

const encoder = new TextEncoder();

/** The size of a message body as the queue counts it with `contentType: "json"`. */
export function jsonBytes(body: unknown): number {
	return encoder.encode(JSON.stringify(body)).length;
}

/**
 * Splits messages, in order, into `sendBatch` calls within the limits above:
 * a new batch starts when the next message would pass the count or the bytes.
 * A message alone over the bytes still gets a batch of its own (it cannot be
 * made smaller here; callers keep messages under CARRIED_MESSAGE_BYTES).
 */
export function packBatches<T>(items: readonly T[], bytesOf: (item: T) => number): T[][] {
	const batches: T[][] = [];
	let current: T[] = [];
	let bytes = 0;
	for (const item of items) {
		const size = bytesOf(item);
		if (current.length > 0 && (current.length >= QUEUE_BATCH_MESSAGES || bytes + size > QUEUE_BATCH_BYTES)) {
			batches.push(current);
			current = [];
			bytes = 0;
		}
		current.push(item);
		bytes += size;
	}
	if (current.length > 0) batches.push(current);
	return batches;
}
