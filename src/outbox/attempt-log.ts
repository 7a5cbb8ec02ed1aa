import { markAttempted, recordAttempts } from "../db/delivery-attempts";
import type { AttemptRecord } from "../domain/delivery";
import type { LoggedAttempt, OutboxMessage } from "./events";

/**
 * Writing a consumer batch's attempts, so that a delivery that succeeded is
 * never sent again because its log line was lost (issue 20 item 6). The
 * attempt log and the event's marks (enqueued, attempted, delivered) are one
 * D1 batch; if it fails, the marks alone are written (the sweep reads only
 * them); if D1 refuses even that, each delivered event's record travels back
 * through the queue as a **log note** (`{eventid, logged}`), which the
 * consumer writes later without sending anything.
 */

/** How long the marks alone are retried, in pauses between tries (ms), before a note is queued. */
const MARK_PAUSES_MS = [0, 250, 1000];
/** A log note waits this long before the consumer tries to write it (D1 was failing a moment ago). */
export const NOTE_DELAY_SECONDS = 10;

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 300);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes the records (log and marks, else the marks alone); true when at
 * least the marks were written.
 */
export async function writeAttempts(db: D1Database, records: AttemptRecord[]): Promise<boolean> {
	if (records.length === 0) return true;
	try {
		await recordAttempts(db, records);
		return true;
	} catch (error) {
		console.error(
			JSON.stringify({ msg: "could not log delivery attempts; marking the events alone", count: records.length, error: errorText(error) }),
		);
	}
	for (const ms of MARK_PAUSES_MS) {
		if (ms > 0) await pause(ms);
		try {
			await markAttempted(db, records);
			return true;
		} catch (error) {
			console.error(JSON.stringify({ msg: "could not mark delivery attempts", count: records.length, error: errorText(error) }));
		}
	}
	return false;
}

/**
 * Queues a log note for each record that ended its event's delivery (a
 * failed attempt needs none: its message is retried and tries again). If the
 * queue refuses too, the event may be sent once more: logged, at least once.
 */
export async function queueLogNotes(env: Env, records: AttemptRecord[]): Promise<void> {
	const settled = records.filter((r) => r.outcome !== "failed");
	if (settled.length === 0) return;
	const notes = settled.map((r) => {
		const logged: LoggedAttempt = {
			attempt: r.attempt,
			outcome: r.outcome,
			responseCode: r.responseCode,
			durationMs: r.durationMs,
			error: r.error,
		};
		return { body: { eventid: r.eventid, logged } satisfies OutboxMessage, contentType: "json" as const, delaySeconds: NOTE_DELAY_SECONDS };
	});
	try {
		await env.OUTBOX.sendBatch(notes);
	} catch (error) {
		console.error(
			JSON.stringify({
				msg: "could not queue delivery log notes; these delivered events may be sent again",
				eventids: settled.map((r) => r.eventid),
				error: errorText(error),
			}),
		);
	}
}
