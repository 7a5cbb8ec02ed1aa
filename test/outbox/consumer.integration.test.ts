import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { enqueueOutboxEvents, outboxMessage } from "../../src/outbox/events";
import { sweepOutbox } from "../../src/outbox/sweep";
import { admin } from "../support/api";
import {
	attemptsOf,
	createOutboxApp,
	eventRow,
	hookUrl,
	received,
	recordEmail,
	recordEvent,
	recordedEmail,
	recordingDb,
	recordWebhook,
	runBatch,
	setAnswers,
	uniqueKey,
	waitForReceived,
} from "./support";

afterEach(() => {
	vi.restoreAllMocks();
});

async function webhookApp(name: string) {
	const key = uniqueKey(name);
	const app = await createOutboxApp({ webhookurl: hookUrl(key) });
	return { key, app };
}

describe("webhook delivery", () => {
	it("posts the signed envelope, acks, logs the attempt and marks the event delivered", async () => {
		const { key, app } = await webhookApp("good");
		const event = await recordWebhook(app.appid, "reward.created", { rewarddtlid: "r_42", reward: 10, rewardstatus: "Approved" });

		const { result, ids } = await runBatch([{ body: { eventid: event.eventid } }]);

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(result.retryMessages).toEqual([]);
		const [request, ...more] = await received(key);
		expect(more).toEqual([]);
		expect(request!.method).toBe("POST");
		expect(request!.headers["content-type"]).toBe("application/json");
		expect(request!.headers["webhook-id"]).toBe(event.eventid);
		expect(Number(request!.headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -2);
		expect(request!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
		expect(JSON.parse(request!.body)).toEqual({
			type: "reward.created",
			timestamp: event.createdAt,
			livemode: true,
			data: { rewarddtlid: "r_42", reward: 10, rewardstatus: "Approved" },
		});

		const attempts = await attemptsOf(event.eventid);
		expect(attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: "delivered", response_code: 200, error: null })]);
		expect(attempts[0]!.duration_ms).toBeGreaterThanOrEqual(0);
		expect((await eventRow(event.eventid))?.delivered_at).toEqual(expect.any(String));
	});

	it("is verified by the standardwebhooks package exactly as a receiver would", async () => {
		const { key, app } = await webhookApp("verify");
		const event = await recordWebhook(app.appid, "conversion.recorded", { customid: "7", extrainfo: "order #7 & more", rewards: [] });
		await runBatch([{ body: { eventid: event.eventid } }]);

		const [request] = await received(key);
		const verified = new Webhook(app.webhooksecret).verify(request!.body, request!.headers);
		expect(verified).toEqual({
			type: "conversion.recorded",
			timestamp: event.createdAt,
			livemode: true,
			data: { customid: "7", extrainfo: "order #7 & more", rewards: [] },
		});
		// A receiver holding another secret, or a tampered body, rejects it.
		const other = await createOutboxApp();
		expect(() => new Webhook(other.webhooksecret).verify(request!.body, request!.headers)).toThrow();
		expect(() => new Webhook(app.webhooksecret).verify(request!.body.replace("7", "8"), request!.headers)).toThrow();
	});

	it("retries a 500 after 5 s with the same webhook-id, then acks the success", async () => {
		const { key, app } = await webhookApp("500-then-ok");
		await setAnswers(key, [{ status: 500, body: "database down" }]);
		const event = await recordWebhook(app.appid);

		const first = await runBatch([{ body: { eventid: event.eventid }, attempts: 1 }]);
		expect(first.result.explicitAcks).toEqual([]);
		expect(first.retries).toEqual([{ msgId: first.ids[0], delaySeconds: 5 }]);
		expect((await eventRow(event.eventid))?.delivered_at).toBeNull();

		const second = await runBatch([{ body: { eventid: event.eventid }, attempts: 2 }]);
		expect(second.result.explicitAcks).toEqual([second.ids[0]]);
		expect(second.result.retryMessages).toEqual([]);

		const requests = await received(key);
		expect(requests).toHaveLength(2);
		expect(requests.map((r) => r.headers["webhook-id"])).toEqual([event.eventid, event.eventid]);
		expect(requests[0]!.body).toBe(requests[1]!.body);
		expect(await attemptsOf(event.eventid)).toEqual([
			expect.objectContaining({ attempt: 1, outcome: "failed", response_code: 500, error: "HTTP 500: database down" }),
			expect.objectContaining({ attempt: 2, outcome: "delivered", response_code: 200, error: null }),
		]);
		expect((await eventRow(event.eventid))?.delivered_at).toEqual(expect.any(String));
	});

	it("gives up on a receiver that hangs past the timeout and retries on the schedule", async () => {
		const { key, app } = await webhookApp("hang");
		await setAnswers(key, [{ delayMs: 5000 }]);
		const event = await recordWebhook(app.appid);

		const { retries, ids } = await runBatch([{ body: { eventid: event.eventid }, attempts: 3 }]);

		expect(retries).toEqual([{ msgId: ids[0], delaySeconds: 30 * 60 }]);
		expect(await received(key)).toHaveLength(1);
		const [attempt] = await attemptsOf(event.eventid);
		expect(attempt).toMatchObject({ attempt: 3, outcome: "failed", response_code: null, error: "timed out after 1000 ms" });
		expect(attempt!.duration_ms).toBeGreaterThanOrEqual(900);
		expect((await eventRow(event.eventid))?.delivered_at).toBeNull();
	});

	it("still retries at the last attempt so the platform dead-letters the message, and says so in the log", async () => {
		const { key, app } = await webhookApp("dead");
		await setAnswers(key, [], { status: 503 });
		const event = await recordWebhook(app.appid);

		const sixth = await runBatch([{ body: { eventid: event.eventid }, attempts: 6 }]);
		expect(sixth.retries).toEqual([{ msgId: sixth.ids[0], delaySeconds: 10 * 3600 }]);

		const seventh = await runBatch([{ body: { eventid: event.eventid }, attempts: 7 }]);
		expect(seventh.result.explicitAcks).toEqual([]);
		expect(seventh.retries).toEqual([{ msgId: seventh.ids[0], delaySeconds: 10 * 3600 }]);

		const attempts = await attemptsOf(event.eventid);
		expect(attempts.map((a) => [a.attempt, a.outcome, a.response_code])).toEqual([
			[6, "failed", 503],
			[7, "failed", 503],
		]);
		expect(attempts[0]!.error).toBe("HTTP 503: ok");
		expect(attempts[1]!.error).toBe("HTTP 503: ok; retries exhausted, moved to the dead-letter queue");
		expect((await eventRow(event.eventid))?.delivered_at).toBeNull();
	});

	it("counts a connection refused and a redirect as failures (redirects are not followed)", async () => {
		const refused = await createOutboxApp({ webhookurl: "http://127.0.0.1:1/hook" });
		const e1 = await recordWebhook(refused.appid);
		const key = uniqueKey("redirect");
		const redirecting = await createOutboxApp({ webhookurl: hookUrl(key) });
		await setAnswers(key, [{ status: 307 }]);
		const e2 = await recordWebhook(redirecting.appid);

		const { result, retries, ids } = await runBatch([{ body: { eventid: e1.eventid } }, { body: { eventid: e2.eventid } }]);

		expect(result.retryMessages.map((r) => r.msgId)).toEqual(ids);
		expect(retries).toEqual([
			{ msgId: ids[0], delaySeconds: 5 },
			{ msgId: ids[1], delaySeconds: 5 },
		]);
		const [a1] = await attemptsOf(e1.eventid);
		expect(a1).toMatchObject({ outcome: "failed", response_code: null });
		expect(a1!.error).toBeTruthy();
		expect(await attemptsOf(e2.eventid)).toEqual([expect.objectContaining({ outcome: "failed", response_code: 307 })]);
	});

	it("sends nothing twice for a duplicate message, in the same batch or a later one", async () => {
		const { key, app } = await webhookApp("dup");
		const event = await recordWebhook(app.appid);

		const first = await runBatch([{ body: { eventid: event.eventid } }, { body: { eventid: event.eventid } }]);
		expect(first.result.explicitAcks.sort()).toEqual([...first.ids].sort());
		const again = await runBatch([{ body: { eventid: event.eventid }, attempts: 1 }]);
		expect(again.result.explicitAcks).toEqual([again.ids[0]]);

		expect(await received(key)).toHaveLength(1);
		expect(await attemptsOf(event.eventid)).toHaveLength(1);
	});

	it("skips an app without a webhook URL: logged as skipped, marked delivered, acked", async () => {
		const app = await createOutboxApp();
		const event = await recordWebhook(app.appid, "user.registered", { userkey: "u1" });

		const { result, ids } = await runBatch([{ body: { eventid: event.eventid } }]);

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(await attemptsOf(event.eventid)).toEqual([
			expect.objectContaining({ outcome: "skipped", response_code: null, error: "the app has no webhook URL" }),
		]);
		expect((await eventRow(event.eventid))?.delivered_at).toEqual(expect.any(String));
	});
});

describe("per batch", () => {
	it("reads and logs a batch of carried events in 2 D1 round trips, whatever its size", async () => {
		const { key, app } = await webhookApp("per-batch");
		const events = await Promise.all([1, 2, 3, 4, 5].map((n) => recordWebhook(app.appid, "reward.created", { n })));
		const { db, trips } = recordingDb();

		const { result, ids } = await runBatch(
			events.map((e) => ({ body: outboxMessage(e) })),
			{ ...env, DB: db },
		);

		expect(result.explicitAcks.sort()).toEqual([...ids].sort());
		expect((await received(key)).map((r) => JSON.parse(r.body).data.n).sort()).toEqual([1, 2, 3, 4, 5]);
		// The outbox sweep runs now and then from the consumer; it is not the batch's own work.
		const own = trips.filter((sqls) => !sqls.some((sql) => sql.includes("enqueued_at IS NULL AND created_at <")));
		expect(own).toHaveLength(2);
		for (const e of events) {
			expect(await attemptsOf(e.eventid)).toEqual([expect.objectContaining({ outcome: "delivered", response_code: 200 })]);
			expect(await eventRow(e.eventid)).toMatchObject({ delivered_at: expect.any(String), enqueued_at: expect.any(String) });
		}
	});

	it("reads the app's delivery settings once and then from the isolate's cache; a PATCH here forgets them", async () => {
		const { key, app } = await webhookApp("settings-cache");
		const first = await recordWebhook(app.appid);
		await runBatch([{ body: outboxMessage(first) }]);
		const second = await recordWebhook(app.appid);
		const { db, trips } = recordingDb();
		await runBatch([{ body: outboxMessage(second) }], { ...env, DB: db });
		const read = trips.find((sqls) => sqls.some((sql) => sql.includes("FROM outbox_events WHERE eventid IN")));
		expect(read?.join("\n")).toContain("FROM apps");
		expect(await waitForReceived(key, 2)).toHaveLength(2);

		const other = uniqueKey("settings-cache-new");
		await admin("PATCH", `/apps/${app.appid}`, { webhookurl: hookUrl(other) });
		const third = await recordWebhook(app.appid);
		await runBatch([{ body: outboxMessage(third) }]);
		expect((await waitForReceived(other))[0]!.headers["webhook-id"]).toBe(third.eventid);
	});

	it("still delivers a message that names its event by id only (sweep, redelivery, older producers)", async () => {
		const { key, app } = await webhookApp("by-id");
		const carried = await recordWebhook(app.appid, "reward.created", { n: 1 });
		const byId = await recordWebhook(app.appid, "reward.created", { n: 2 });
		const { result, ids } = await runBatch([{ body: outboxMessage(carried) }, { body: { eventid: byId.eventid } }]);
		expect(result.explicitAcks.sort()).toEqual([...ids].sort());
		expect((await waitForReceived(key, 2)).map((r) => r.headers["webhook-id"]).sort()).toEqual([carried.eventid, byId.eventid].sort());
	});
});

describe("message bodies and missing rows", () => {
	it("logs and acks invalid bodies without disturbing the rest of the batch", async () => {
		const { key, app } = await webhookApp("invalid-body");
		const event = await recordWebhook(app.appid);
		const errors = vi.spyOn(console, "error").mockImplementation(() => {});

		const { result, ids } = await runBatch([
			{ body: "not an object" },
			{ body: { eventid: 5 } },
			{ body: null },
			{ body: { eventid: "" } },
			{ body: { eventid: event.eventid } },
		]);

		expect(result.explicitAcks.sort()).toEqual([...ids].sort());
		expect(result.retryMessages).toEqual([]);
		expect(errors.mock.calls.filter(([line]) => String(line).includes("invalid body"))).toHaveLength(4);
		expect(await received(key)).toHaveLength(1);
	});

	it("retries an event row that is not visible yet a few times, then acks and logs it", async () => {
		const errors = vi.spyOn(console, "error").mockImplementation(() => {});
		const eventid = "msg_notrecordedyet";

		const first = await runBatch([{ body: { eventid }, attempts: 1 }]);
		expect(first.retries).toEqual([{ msgId: first.ids[0], delaySeconds: 5 }]);
		const third = await runBatch([{ body: { eventid }, attempts: 3 }]);
		expect(third.retries).toEqual([{ msgId: third.ids[0], delaySeconds: 20 }]);
		const fourth = await runBatch([{ body: { eventid }, attempts: 4 }]);
		expect(fourth.result.explicitAcks).toEqual([fourth.ids[0]]);
		expect(fourth.result.retryMessages).toEqual([]);
		expect(errors.mock.calls.some(([line]) => String(line).includes(eventid))).toBe(true);
	});
});

/**
 * This test's own recorder of the email binding, in an env handed to the consumer: every send still goes to
 * the real (simulated) binding. Not a spy on the shared env's binding, which other test files also use.
 */
describe("email delivery", () => {
	it("sends through the send_email binding from the app's sender and logs the attempt", async () => {
		const app = await createOutboxApp({ emailsender: "rewards@shop.example.com" });
		const event = await recordEmail(app.appid, {
			to: "friend@example.org",
			toName: "Ann Friend",
			subject: "Bob invited you: get $10",
			text: "Join: https://x.test/r/ABCD2345",
			html: '<p>Join: <a href="https://x.test/r/ABCD2345">link</a></p>',
		});
		const { send, runEnv } = recordedEmail();

		const { result, ids } = await runBatch([{ body: { eventid: event.eventid } }], runEnv);

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(send).toHaveBeenCalledTimes(1);
		expect(send).toHaveBeenCalledWith({
			from: "rewards@shop.example.com",
			to: { name: "Ann Friend", email: "friend@example.org" },
			subject: "Bob invited you: get $10",
			text: "Join: https://x.test/r/ABCD2345",
			html: '<p>Join: <a href="https://x.test/r/ABCD2345">link</a></p>',
		});
		// The real (simulated) binding accepted it and gave it a message id.
		await expect(send.mock.results[0]!.value).resolves.toEqual({ messageId: expect.any(String) });
		expect(await attemptsOf(event.eventid)).toEqual([expect.objectContaining({ attempt: 1, outcome: "delivered", error: null })]);
		expect((await eventRow(event.eventid))?.delivered_at).toEqual(expect.any(String));
	});

	it("uses DEFAULT_EMAIL_SENDER when the app has none, and sends a duplicate only once", async () => {
		const app = await createOutboxApp();
		const event = await recordEmail(app.appid, { to: "a@example.org", subject: "Reminder", text: "t", html: "<p>t</p>" });
		const { send, runEnv } = recordedEmail();

		await runBatch([{ body: { eventid: event.eventid } }], runEnv);
		await runBatch([{ body: { eventid: event.eventid } }], runEnv);

		expect(send).toHaveBeenCalledTimes(1);
		expect(send.mock.calls[0]![0]).toMatchObject({ from: env.DEFAULT_EMAIL_SENDER, to: "a@example.org", subject: "Reminder" });
	});

	it("acks an email whose stored payload can never be sent, logging a permanent failure", async () => {
		const app = await createOutboxApp();
		const event = await recordEvent({
			eventid: "msg_badpayload1",
			appid: app.appid,
			kind: "email",
			type: "email.reminder",
			payload: { to: "not-an-address", subject: "x", text: "x", html: "x" },
			createdAt: new Date().toISOString(),
		});
		const { send, runEnv } = recordedEmail();

		const { result, ids } = await runBatch([{ body: { eventid: event.eventid } }], runEnv);

		expect(result.explicitAcks).toEqual([ids[0]]);
		expect(send).not.toHaveBeenCalled();
		const [attempt] = await attemptsOf(event.eventid);
		expect(attempt).toMatchObject({ outcome: "failed" });
		expect(attempt!.error).toMatch(/^permanent: invalid email payload: to/);
	});
});

describe("through the real queue", () => {
	it("delivers what the producer enqueues (src/index.ts wires the consumer)", async () => {
		const { key, app } = await webhookApp("real-queue");
		const event = await recordWebhook(app.appid, "referral.attributed", { userkey: "u2", referrerkey: "u1" });
		await enqueueOutboxEvents(env, [event.eventid]);

		const [request] = await waitForReceived(key);
		expect(request!.headers["webhook-id"]).toBe(event.eventid);
		expect((await eventRow(event.eventid))?.enqueued_at).toEqual(expect.any(String));
	});

	it("sweeps events older than a minute whose enqueue failed, and leaves fresh ones to their producer", async () => {
		const { key, app } = await webhookApp("sweep");
		const old = await recordEvent(
			{ ...(await recordWebhook(app.appid)), eventid: `msg_old${crypto.randomUUID().slice(0, 8)}` },
			{ createdAt: new Date(Date.now() - 5 * 60_000).toISOString() },
		);
		const fresh = await recordWebhook(app.appid);

		const swept = await sweepOutbox(env);

		expect(swept).toBeGreaterThanOrEqual(1);
		expect((await eventRow(old.eventid))?.enqueued_at).toEqual(expect.any(String));
		expect((await eventRow(fresh.eventid))?.enqueued_at).toBeNull();
		const requests = await waitForReceived(key);
		expect(requests.map((r) => r.headers["webhook-id"])).toContain(old.eventid);
		// Swept again at once, neither is handed to the queue again (other tests' events may be).
		const enqueued = (await eventRow(old.eventid))?.enqueued_at;
		await sweepOutbox(env);
		expect((await eventRow(old.eventid))?.enqueued_at).toBe(enqueued);
		expect((await eventRow(fresh.eventid))?.enqueued_at).toBeNull();
	});
});
