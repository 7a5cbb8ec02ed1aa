import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sweepOutbox } from "../../src/outbox/sweep";
import {
	attemptsOf,
	createOutboxApp,
	eventRow,
	faultyDb,
	hookUrl,
	received,
	recordingQueue,
	recordWebhook,
	runBatch,
	uniqueKey,
} from "./support";

/**
 * Issue 20 item 6: when writing a batch's attempt log failed, a delivery that
 * had succeeded was left unmarked, and the sweep sent the webhook again a
 * minute later, against what the consumer's comment said.
 */

afterEach(() => {
	vi.restoreAllMocks();
});

const attemptLog = (sql: string) => sql.includes("INSERT INTO delivery_attempts");
const eventMarks = (sql: string) => sql.includes("UPDATE outbox_events SET enqueued_at = COALESCE");

/** What a sweep well after the delivery would send again, of this event. */
async function sweptLater(eventid: string): Promise<string[]> {
	const queue = recordingQueue();
	await sweepOutbox(queue.runEnv, { now: Date.now() + 10 * 60_000 });
	return queue.sent.filter((id) => id === eventid);
}

describe("a failed attempt-log write never sends a delivered webhook again", () => {
	it("the log refused: the event is still marked delivered, and no sweep sends it again", async () => {
		const key = uniqueKey("log-refused");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		// Recorded as an operation does (not marked enqueued: the consumer marks it).
		const event = await recordWebhook(app.appid);

		const { result, ids } = await runBatch([{ body: { eventid: event.eventid } }], { ...env, DB: faultyDb(attemptLog) });
		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(await received(key)).toHaveLength(1);
		expect(await eventRow(event.eventid)).toMatchObject({ delivered_at: expect.any(String), enqueued_at: expect.any(String) });

		expect(await sweptLater(event.eventid)).toEqual([]);
	});

	it("D1 refusing the log and the marks: the record comes back as a log note, written later without a second send", async () => {
		const key = uniqueKey("d1-refused");
		const app = await createOutboxApp({ webhookurl: hookUrl(key) });
		const event = await recordWebhook(app.appid);
		const queue = recordingQueue();
		const down = { ...queue.runEnv, DB: faultyDb((sql) => attemptLog(sql) || eventMarks(sql)) };

		await runBatch([{ body: { eventid: event.eventid } }], down);
		expect(await received(key)).toHaveLength(1);
		expect(queue.bodies).toEqual([
			{
				eventid: event.eventid,
				logged: { attempt: 1, outcome: "delivered", responseCode: 200, durationMs: expect.any(Number), error: null },
			},
		]);

		// The note, once D1 takes writes again: logged and marked, nothing sent.
		const { result, ids } = await runBatch([{ body: queue.bodies[0] }]);
		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(await received(key)).toHaveLength(1);
		expect(await attemptsOf(event.eventid)).toEqual([expect.objectContaining({ attempt: 1, outcome: "delivered", response_code: 200 })]);
		expect((await eventRow(event.eventid))?.delivered_at).toEqual(expect.any(String));
		expect(await sweptLater(event.eventid)).toEqual([]);
	});
});
