import { eventsAwaitingGrants, markPassOutcomes, type PassOutcome } from "../db/event-grants";
import { ApiError } from "../http/errors";
import { grantConversion } from "./conversion-grants";
import { recordConversion } from "./conversion-work";

/**
 * The server completes recorded conversions (issue 20): an event is recorded
 * with its frozen decision before its grants run, so a Worker that dies (or
 * a ledger that fails) in between leaves an event whose rewards were never
 * granted. The request's own grants confirm it within milliseconds (the
 * announcing ledger's flush clears the mark); this pass, run every minute,
 * completes the events still unconfirmed a minute after they were recorded,
 * exactly as a client's retry of the same customid would (every step is
 * idempotent), so the rewards arrive within two minutes without one.
 */

/** How long the request that recorded an event has to confirm its grants before the pass steps in. */
export const COMPLETION_DELAY_MS = 60_000;
/** Events completed per pass: bounded, so a backlog (a long D1 or ledger outage) drains over a few minutes. */
const PER_PASS = 50;

export interface CompletionReport {
	completed: number;
	/** Events that can never be granted (their user was erased since): their mark is cleared. */
	refused: number;
	failed: number;
}

export async function completeRecordedConversions(env: Env, nowMs = Date.now()): Promise<CompletionReport> {
	const cutoff = new Date(nowMs - COMPLETION_DELAY_MS).toISOString();
	const pending = await eventsAwaitingGrants(env.DB, cutoff, PER_PASS);
	const report: CompletionReport = { completed: 0, refused: 0, failed: 0 };
	const outcomes = await Promise.allSettled(
		pending.map(async (event) => {
			const conversion = await recordConversion(env.DB, event);
			await grantConversion(env, event.appid, conversion);
		}),
	);
	const marks: PassOutcome[] = [];
	for (const [i, outcome] of outcomes.entries()) {
		const event = pending[i]!;
		if (outcome.status === "fulfilled") {
			report.completed++;
		} else if (outcome.reason instanceof ApiError && outcome.reason.status < 500) {
			marks.push({ appid: event.appid, customid: event.customid, refused: true });
			report.refused++;
		} else {
			// Left marked, one failure more: the next pass tries it again after the events that failed less.
			console.error("conversion completion failed", { appid: event.appid, customid: event.customid, error: String(outcome.reason) });
			marks.push({ appid: event.appid, customid: event.customid, refused: false });
			report.failed++;
		}
	}
	await markPassOutcomes(env.DB, marks);
	return report;
}
