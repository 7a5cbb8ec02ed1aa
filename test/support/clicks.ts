import { env } from "cloudflare:workers";
import { clickCounterFor } from "../../src/clicks/click-counter";

/** Rolls the clicks of `codes` up into D1 now (the click counter does it FLUSH_MS after a click), so a test reads them at once. */
export async function flushClicks(...codes: string[]): Promise<void> {
	for (const code of codes) {
		const counter = clickCounterFor(env, code.toUpperCase());
		while ((await counter.flush()) > 0) {}
	}
}
