/**
 * Reads `read()` every 50 ms until `done` holds for its value, and answers that value; after `timeoutMs` throws,
 * naming `what` and the last value read. For states that arrive in the background (a queue consumer, an alarm).
 */
export async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await read();
		if (done(value)) return value;
		if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms (last: ${JSON.stringify(value)})`);
		await new Promise((r) => setTimeout(r, 50));
	}
}
