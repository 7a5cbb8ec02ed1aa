import { eventsAwaitingGrants, markPassOutcomes, type PassOutcome, recordedAmong } from "../db/event-grants";
import type { EventInput } from "../db/events";
import { EVENT_GATE_SHARDS } from "../domain/gate-shard";
import { ApiError } from "../http/errors";
import { gateStub, type PendingEvent, type Settlement } from "../ledger/event-gate";
import { grantConversion } from "./conversion-grants";
import { recordConversion } from "./conversion-work";

/**
 * The server completes recorded conversions (issue 20): an event is claimed
 * with its frozen decision (its gate, ledger/event-gate.ts, issue 49) before
 * its grants run, so a Worker that dies (or a ledger that fails) in between
 * leaves an event whose rewards were never granted. The announcing ledger
 * writes the event's `conversion.recorded` entry only once every grant is
 * done, and its projection writes D1's row of the event: so a pending event
 * whose row is in D1 is confirmed. This pass, run every minute, settles the
 * gates' pending events recorded more than a minute ago: confirmed when D1
 * has their row, else completed exactly as a client's retry of the same
 * customid would (every step is idempotent), so the rewards arrive within
 * two minutes without one. Events recorded in D1 before the gates
 * (`grants_pending`, migration 0012) are completed as before.
 */

/** How long the request that recorded an event has to confirm its grants before the pass steps in. */
export const COMPLETION_DELAY_MS = 60_000;
/** Events completed per pass: bounded, so a backlog (a long D1 or ledger outage) drains over a few minutes. */
const PER_PASS = 50;
/** Pending events read per gate per pass (one D1 read each to find the confirmed ones). */
const PER_GATE = 100;

export interface CompletionReport {
	completed: number;
	/** Events that can never be granted (their user was erased since): their mark is cleared. */
	refused: number;
	failed: number;
	/** Pending events of the gates whose D1 row was there: their grants were done. */
	confirmed: number;
}

type Outcome = "completed" | "refused" | "failed";

/** Records and grants `event` again (idempotent); what came of it. */
async function complete(env: Env, event: EventInput): Promise<Outcome> {
	try {
		const conversion = await recordConversion(env, event);
		await grantConversion(env, event.appid, conversion);
		return "completed";
	} catch (error) {
		if (error instanceof ApiError && error.status < 500) return "refused";
		// One failure more: the next pass tries it again after the events that failed less.
		console.error("conversion completion failed", { appid: event.appid, customid: event.customid, error: String(error) });
		return "failed";
	}
}

const count = (report: CompletionReport, outcome: Outcome) => {
	report[outcome]++;
};

export async function completeRecordedConversions(env: Env, nowMs = Date.now()): Promise<CompletionReport> {
	const cutoff = new Date(nowMs - COMPLETION_DELAY_MS).toISOString();
	const report: CompletionReport = { completed: 0, refused: 0, failed: 0, confirmed: 0 };
	// The gates' pending events, every shard asked at once.
	const shards = await Promise.all(
		Array.from({ length: EVENT_GATE_SHARDS }, async (_, shard) => ({ shard, pending: await gatePending(env, shard, cutoff) })),
	);
	let budget = PER_PASS;
	await Promise.all(
		shards.map(async ({ shard, pending }) => {
			if (pending.length === 0) return;
			const inD1 = await recordedAmong(
				env.DB,
				pending.map((e) => ({ appid: e.appid, customid: e.customid })),
			);
			const settled: Settlement[] = [];
			const redrive: PendingEvent[] = [];
			for (const event of pending) {
				if (inD1.has(`${event.appid}\u0000${event.customid}`)) settled.push(settlement(event, "confirmed"));
				else if (budget > 0) {
					budget--;
					redrive.push(event);
				}
			}
			report.confirmed += settled.length;
			const outcomes = await Promise.all(redrive.map((event) => complete(env, event)));
			for (const [i, outcome] of outcomes.entries()) {
				count(report, outcome);
				// Completed: still pending until its row reaches D1 (the next pass confirms it); refused: for good.
				if (outcome !== "completed") settled.push(settlement(redrive[i]!, outcome));
			}
			if (settled.length > 0) await gateStub(env, shard).settle(settled);
		}),
	);
	// Events recorded in D1 before the gates, still marked.
	const pending = await eventsAwaitingGrants(env.DB, cutoff, Math.max(budget, 0));
	const outcomes = await Promise.all(pending.map((event) => complete(env, event)));
	const marks: PassOutcome[] = [];
	for (const [i, outcome] of outcomes.entries()) {
		count(report, outcome);
		const event = pending[i]!;
		if (outcome !== "completed") marks.push({ appid: event.appid, customid: event.customid, refused: outcome === "refused" });
	}
	await markPassOutcomes(env.DB, marks);
	return report;
}

async function gatePending(env: Env, shard: number, cutoff: string): Promise<PendingEvent[]> {
	try {
		return await gateStub(env, shard).pendingBefore(cutoff, PER_GATE);
	} catch (error) {
		console.error("conversion completion: gate unreadable", { shard, error: String(error) });
		return [];
	}
}

const settlement = (event: PendingEvent, outcome: Settlement["outcome"]): Settlement => ({
	appid: event.appid,
	customid: event.customid,
	createdAt: event.createdAt,
	failures: event.failures,
	outcome,
});
