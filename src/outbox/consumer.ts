import { type BatchLookup, type BatchState, loadBatchState, type OutboxEventRow } from "../db/outbox-events";
import type { AttemptRecord, DeliveryApp } from "../domain/delivery";
import { instrumentEnv } from "../instrument/d1-metrics";
import { type AppsView, takeAppsView } from "./app-settings";
import { queueLogNotes, writeAttempts } from "./attempt-log";
import { passBreaker, reportToBreaker } from "./breaker-gate";
import { DEFAULT_WEBHOOK_TIMEOUT_MS, type DeliveryOptions, deliver, isTimeout } from "./deliver";
import { type CarriedEvent, type LoggedAttempt, outboxMessageSchema } from "./events";
import { forEachLimited, interleaveByKey, MAX_PARALLEL_ATTEMPTS } from "./parallel";
import { isLastAttempt, MISSING_EVENT_ATTEMPTS, missingEventDelaySeconds, retryDelaySeconds } from "./retry";
import { sweepOutbox } from "./sweep";

/** Optional settings read from the environment (not in wrangler.toml: the defaults apply). */
export interface OutboxSettings {
	/** Webhook connect and first-byte timeout in milliseconds; default 1500 (deliver.ts). Tests set it lower. */
	WEBHOOK_TIMEOUT_MS?: string;
}

export function deliveryOptions(env: Env): DeliveryOptions {
	const configured = Number((env as Env & OutboxSettings).WEBHOOK_TIMEOUT_MS);
	return {
		timeoutMs: Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_WEBHOOK_TIMEOUT_MS,
		defaultSender: env.DEFAULT_EMAIL_SENDER,
	};
}

const log = (level: "log" | "warn" | "error", msg: string, fields: Record<string, unknown>) =>
	console[level](JSON.stringify({ msg, ...fields }));

/** The outbox sweep runs from the consumer at most this often per isolate (it costs a D1 read). */
export const SWEEP_EVERY_MS = 10_000;
let lastSweep = 0;

/** One message of a batch that passed validation, with what the batch read says about it. */
interface Work {
	message: Message<unknown>;
	eventid: string;
	carried?: CarriedEvent;
	/** A log note (attempt-log.ts): an attempt made earlier, to be written, not a delivery to make. */
	note?: LoggedAttempt;
	record?: AttemptRecord;
	/** What to do with the message once the attempts are logged. */
	settle: () => void;
}

/**
 * Queue consumer for emails and webhooks. It works per batch: ONE D1 round
 * trip reads what the batch needs (delivery state of its events, the rows of
 * events that came by id only, delivery settings of apps not cached), then
 * each message is delivered on its own (at most MAX_PARALLEL_ATTEMPTS at a
 * time, apps taking turns: parallel.ts), then ONE round trip logs every
 * attempt. Each message is still acked or retried on its own, so one bad
 * message never replays the batch.
 *
 * Per message: an invalid body is logged and acked; an event row not visible
 * yet is retried a few times, then dropped; an event already delivered is
 * acked without sending; otherwise one attempt is made and logged in
 * `delivery_attempts`. Success (or nothing to send) marks the event delivered
 * and acks; a failure retries with the delay of `retryDelaySeconds`, and after
 * the last attempt the platform moves the message to the dead-letter queue.
 */
export async function queue(
	batch: MessageBatch<unknown>,
	rawEnv: Env,
	ctx: ExecutionContext,
	/** The clock of the settings cache; tests move it to expire entries mid-batch. */
	now: () => number = Date.now,
): Promise<void> {
	const env = instrumentEnv(rawEnv, "consumer");
	// Also pick up events whose enqueue failed, now and then; never delays or fails the batch.
	if (Date.now() - lastSweep >= SWEEP_EVERY_MS) {
		lastSweep = Date.now();
		ctx.waitUntil(sweepOutbox(env).catch((err) => log("error", "outbox sweep failed", { error: String(err) })));
	}
	const options = deliveryOptions(env);
	const work = acceptMessages(batch.messages);
	if (work.length === 0) return;

	// The settings of the carried events' apps, taken once: attempts decide with this view only.
	const apps = takeAppsView(
		work.flatMap((w) => (w.carried && !w.note ? [w.carried.appid] : [])),
		now,
	);
	let state: BatchState;
	try {
		state = await loadBatchState(env.DB, lookupFor(work, apps.missing));
	} catch (err) {
		// D1 unavailable or the like: try the whole batch again later, on the normal schedule.
		for (const w of work) {
			log("error", "outbox delivery crashed", { eventid: w.eventid, attempt: w.message.attempts, error: String(err) });
			w.message.retry({ delaySeconds: retryDelaySeconds(w.message.attempts) });
		}
		return;
	}
	apps.addRead(state.apps);

	// At most MAX_PARALLEL_ATTEMPTS at a time, apps taking turns (parallel.ts: the platform's six connections).
	const ordered = interleaveByKey(work, (w) => w.carried?.appid ?? state.rows.get(w.eventid)?.appid ?? "");
	// Apps whose endpoint timed out in this batch: their messages not yet attempted are deferred, not attempted.
	const stalled = new Set<string>();
	await forEachLimited(ordered, MAX_PARALLEL_ATTEMPTS, (w) => attemptSafely(w, state, apps, env, options, stalled));

	const records = work.flatMap((w) => (w.record ? [w.record] : []));
	// The sends happened (or not) all the same: a lost log line must not make the sweep send a delivered event again.
	// The marks alone are written when the log is refused; when D1 takes nothing, the records come back as log notes.
	if (!(await writeAttempts(env.DB, records))) await queueLogNotes(env, records);
	for (const w of work) w.settle();
}

/** Validates the bodies; invalid ones and repeats of an event within the batch are acked at once. */
function acceptMessages(messages: readonly Message<unknown>[]): Work[] {
	const seen = new Set<string>();
	const work: Work[] = [];
	for (const message of messages) {
		const parsed = outboxMessageSchema.safeParse(message.body);
		if (!parsed.success) {
			log("error", "outbox message with an invalid body dropped", { messageid: message.id, body: safeJson(message.body) });
			message.ack();
			continue;
		}
		const { eventid, event, logged } = parsed.data;
		if (logged) {
			// Nothing to send, nothing to read: the record is written with the batch's attempts.
			work.push({ message, eventid, note: logged, record: { eventid, ...logged }, settle: () => message.ack() });
			continue;
		}
		// The same event twice in one batch: the first copy carries the delivery.
		if (seen.has(eventid)) {
			message.ack();
			continue;
		}
		seen.add(eventid);
		work.push({ message, eventid, carried: event as CarriedEvent | undefined, settle: () => message.ack() });
	}
	return work;
}

/** What the batch reads: `uncachedApps` are the carried events' apps its view of the cache lacks. */
function lookupFor(all: Work[], uncachedApps: string[]): BatchLookup {
	const work = all.filter((w) => !w.note);
	const carried = work.flatMap((w) => (w.carried ? [w.carried] : []));
	return {
		carried: work.filter((w) => w.carried).map((w) => w.eventid),
		byId: work.filter((w) => !w.carried).map((w) => w.eventid),
		appids: uncachedApps,
		carriedApps: [...new Set(carried.map((c) => c.appid))],
	};
}

/**
 * The event row as delivery needs it: from the message when carried, else as
 * read. The payload is always the stored one, read with the batch: a person
 * erased after the message was sent is redacted there (db/privacy.ts), and
 * nothing personal may leave after an erasure (docs/fraud.md).
 */
function eventOf(w: Work, state: BatchState): OutboxEventRow | undefined {
	if (!w.carried) return state.rows.get(w.eventid);
	const payload = state.payloads.get(w.eventid);
	if (!state.delivered.has(w.eventid) || payload === undefined) return undefined;
	const { appid, kind, type, createdAt } = w.carried;
	return {
		eventid: w.eventid,
		appid,
		kind,
		type,
		payload,
		created_at: createdAt,
		enqueued_at: null,
		delivered_at: state.delivered.get(w.eventid) ?? null,
	};
}

/**
 * `attempt`, with whatever it throws (a D1 error while claiming a breaker
 * probe, say) settled as a retry of that message alone: the batch goes on,
 * and messages already delivered in it are logged and acked, not sent again.
 */
async function attemptSafely(
	w: Work,
	state: BatchState,
	apps: AppsView,
	env: Env,
	options: DeliveryOptions,
	stalled: Set<string>,
): Promise<void> {
	try {
		await attempt(w, state, apps.view, env, options, stalled);
	} catch (err) {
		const attemptNo = w.message.attempts;
		log("error", "outbox delivery crashed", { eventid: w.eventid, attempt: attemptNo, error: String(err) });
		w.settle = () => w.message.retry({ delaySeconds: retryDelaySeconds(attemptNo) });
	}
}

/** Decides and makes the one attempt of a message; what to do with the message is left in `w.settle`. */
async function attempt(
	w: Work,
	state: BatchState,
	apps: ReadonlyMap<string, DeliveryApp | null>,
	env: Env,
	options: DeliveryOptions,
	stalled: Set<string>,
): Promise<void> {
	if (w.note) return;
	const { message, eventid } = w;
	const attemptNo = message.attempts;
	const event = eventOf(w, state);
	if (!event) {
		// The D1 batch that recorded it may not be visible here yet.
		if (attemptNo < MISSING_EVENT_ATTEMPTS) {
			w.settle = () => message.retry({ delaySeconds: missingEventDelaySeconds(attemptNo) });
		} else {
			log("error", "outbox event not found; message dropped", { eventid, attempt: attemptNo });
		}
		return;
	}
	if (event.delivered_at) return;
	if (stalled.has(event.appid)) {
		// Issue 33: the app's endpoint already timed out in this batch. Waiting on it again would hold the
		// batch (and every other app's webhooks behind it) for one more timeout; the message comes back
		// later instead (a delayed retry, no attempt made), so 20 or 200 queued events of a hanging
		// endpoint cost the other apps at most the one timeout.
		w.settle = () => message.retry({ delaySeconds: retryDelaySeconds(attemptNo) });
		log("warn", "outbox delivery deferred: the app's endpoint timed out in this batch", { eventid, attempt: attemptNo });
		return;
	}
	const app = apps.get(event.appid);
	if (app === undefined) {
		// Never looked up for this batch (not a "gone" answer from D1): try again rather than drop it.
		log("warn", "outbox delivery settings not in the batch's view; message retried", { eventid, appid: event.appid });
		w.settle = () => message.retry({ delaySeconds: missingEventDelaySeconds(attemptNo) });
		return;
	}
	const target = { event, app };
	// Circuit breaker (breaker-gate.ts): an endpoint that keeps failing is not attempted during its cool-down.
	const gate = await passBreaker(env.DB, target, Date.now(), state.breakers.get(event.appid) ?? null);
	if (!gate.go) {
		const error = isLastAttempt(attemptNo) ? `${gate.reason}; retries exhausted, moved to the dead-letter queue` : gate.reason;
		w.record = { eventid, attempt: attemptNo, outcome: "failed", responseCode: null, durationMs: 0, error };
		log("warn", "outbox delivery held back by the circuit breaker", { eventid, attempt: attemptNo, error });
		const wait = Math.ceil((gate.until - Date.now()) / 1000);
		w.settle = () => message.retry({ delaySeconds: Math.min(Math.max(retryDelaySeconds(attemptNo), wait), 43_200) });
		return;
	}
	const started = Date.now();
	const result = await deliver(target, env, options);
	const durationMs = Date.now() - started;
	if (isTimeout(result)) stalled.add(event.appid);
	await reportToBreaker(env.DB, target, gate.state, result.outcome === "delivered", result.error).catch((err) =>
		log("error", "breaker update failed", { eventid, error: String(err) }),
	);
	const last = result.outcome === "failed" && !result.permanent && isLastAttempt(attemptNo);
	const error = last ? `${result.error}; retries exhausted, moved to the dead-letter queue` : result.error;
	w.record = { eventid, attempt: attemptNo, outcome: result.outcome, responseCode: result.responseCode, durationMs, error };
	log(result.outcome === "failed" ? "warn" : "log", "outbox delivery attempt", {
		eventid,
		kind: event.kind,
		type: event.type,
		attempt: attemptNo,
		outcome: result.outcome,
		responsecode: result.responseCode,
		durationms: durationMs,
		error,
	});
	if (result.outcome === "failed" && !result.permanent) {
		// On the last attempt this retry is what makes the platform dead-letter the message.
		w.settle = () => message.retry({ delaySeconds: retryDelaySeconds(attemptNo) });
	}
}

function safeJson(value: unknown): string {
	try {
		return (JSON.stringify(value) ?? String(value)).slice(0, 500);
	} catch {
		return String(value).slice(0, 500);
	}
}
