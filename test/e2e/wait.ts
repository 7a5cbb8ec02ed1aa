/**
 * Polls `probe` until it answers a value (anything but undefined) and returns
 * it; after `timeoutMs` fails with `what` and `context()` (say, the end of the
 * service's log). E2E tests wait on the condition itself, never on a delay.
 */
export async function waitFor<T>(
	what: string,
	probe: () => Promise<T | undefined>,
	{ timeoutMs = 20_000, intervalMs = 200, context = () => "" }: { timeoutMs?: number; intervalMs?: number; context?: () => string } = {},
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`);
		await new Promise((r) => setTimeout(r, intervalMs));
	}
}
