import { passBreaker, reportToBreaker } from "./breaker-gate";
import { DEFAULT_WEBHOOK_TIMEOUT_MS, type DeliveryOptions, deliver } from "./deliver";
import { outboxMessageSchema } from "./events";
import { isLastAttempt, MISSING_EVENT_ATTEMPTS, missingEventDelaySeconds, retryDelaySeconds } from "./retry";
import { loadDeliveryTarget, recordAttempt } from "./store";
import { sweepOutbox } from "./sweep";

/** Optional settings read from the environment (not in wrangler.toml: the defaults apply). */
export interface OutboxSettings {
	/** Webhook timeout in milliseconds; default 10000. Tests set it low. */
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

/**
 * Queue consumer for emails and webhooks. Each message is validated and acked
 * or retried on its own, so one bad message never replays the batch.
 *
 * Per message: an invalid body is logged and acked; an event row not visible
 * yet is retried a few times, then dropped; an event already delivered is
 * acked without sending; otherwise one attempt is made and logged in
 * `delivery_attempts`. Success (or nothing to send) marks the event delivered
 * and acks; a failure retries with the delay of `retryDelaySeconds`, and after
 * the last attempt the platform moves the message to the dead-letter queue.
 */
export async function queue(batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext): Promise<void> {
	// Also pick up events whose enqueue failed; never delays or fails the batch.
	ctx.waitUntil(sweepOutbox(env).catch((err) => log("error", "outbox sweep failed", { error: String(err) })));
	const options = deliveryOptions(env);
	const seen = new Set<string>();
	await Promise.all(batch.messages.map((message) => handleMessage(message, env, options, seen)));
}

async function handleMessage(message: Message<unknown>, env: Env, options: DeliveryOptions, seen: Set<string>): Promise<void> {
	const parsed = outboxMessageSchema.safeParse(message.body);
	if (!parsed.success) {
		log("error", "outbox message with an invalid body dropped", { messageid: message.id, body: safeJson(message.body) });
		message.ack();
		return;
	}
	const { eventid } = parsed.data;
	const attempt = message.attempts;
	// The same event twice in one batch: the first copy carries the delivery.
	if (seen.has(eventid)) {
		message.ack();
		return;
	}
	seen.add(eventid);

	try {
		const target = await loadDeliveryTarget(env.DB, eventid);
		if (!target) {
			// The D1 batch that recorded it may not be visible here yet.
			if (attempt < MISSING_EVENT_ATTEMPTS) {
				message.retry({ delaySeconds: missingEventDelaySeconds(attempt) });
			} else {
				log("error", "outbox event not found; message dropped", { eventid, attempt });
				message.ack();
			}
			return;
		}
		if (target.event.delivered_at) {
			message.ack();
			return;
		}

		// Circuit breaker (breaker-gate.ts): an endpoint that keeps failing is not attempted during its cool-down.
		const gate = await passBreaker(env.DB, target);
		if (!gate.go) {
			await holdBack(env, eventid, attempt, gate.reason);
			message.retry({ delaySeconds: Math.min(Math.max(retryDelaySeconds(attempt), Math.ceil((gate.until - Date.now()) / 1000)), 43_200) });
			return;
		}
		const started = Date.now();
		const result = await deliver(target, env, options);
		const durationMs = Date.now() - started;
		await reportToBreaker(env.DB, target, gate.state, result.outcome === "delivered", result.error).catch((err) =>
			log("error", "breaker update failed", { eventid, error: String(err) }),
		);
		const last = result.outcome === "failed" && !result.permanent && isLastAttempt(attempt);
		const error = last ? `${result.error}; retries exhausted, moved to the dead-letter queue` : result.error;
		try {
			await recordAttempt(env.DB, { eventid, attempt, outcome: result.outcome, responseCode: result.responseCode, durationMs, error });
		} catch (err) {
			// The send happened (or not) all the same; a lost log line must not resend it.
			log("error", "could not log a delivery attempt", { eventid, attempt, error: String(err) });
		}
		log(result.outcome === "failed" ? "warn" : "log", "outbox delivery attempt", {
			eventid,
			kind: target.event.kind,
			type: target.event.type,
			attempt,
			outcome: result.outcome,
			responsecode: result.responseCode,
			durationms: durationMs,
			error,
		});
		if (result.outcome !== "failed" || result.permanent) {
			message.ack();
		} else {
			// On the last attempt this retry is what makes the platform dead-letter the message.
			message.retry({ delaySeconds: retryDelaySeconds(attempt) });
		}
	} catch (err) {
		// D1 unavailable or the like: try again later, on the normal schedule.
		log("error", "outbox delivery crashed", { eventid, attempt, error: String(err) });
		message.retry({ delaySeconds: retryDelaySeconds(attempt) });
	}
}

/** Logs a delivery the breaker held back, as a failed attempt that sent nothing. */
async function holdBack(env: Env, eventid: string, attempt: number, reason: string): Promise<void> {
	const error = isLastAttempt(attempt) ? `${reason}; retries exhausted, moved to the dead-letter queue` : reason;
	try {
		await recordAttempt(env.DB, { eventid, attempt, outcome: "failed", responseCode: null, durationMs: 0, error });
	} catch (err) {
		log("error", "could not log a delivery attempt", { eventid, attempt, error: String(err) });
	}
	log("warn", "outbox delivery held back by the circuit breaker", { eventid, attempt, error });
}

function safeJson(value: unknown): string {
	try {
		return (JSON.stringify(value) ?? String(value)).slice(0, 500);
	} catch {
		return String(value).slice(0, 500);
	}
}
