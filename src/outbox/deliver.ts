import { z } from "zod";
import type { AttemptOutcome } from "../domain/delivery";
import { webhookUrlPolicy, webhookUrlProblem } from "../domain/webhook-url";
import { ERASED } from "../privacy/redact";
import { type DeliveryTarget, PERMANENT_FAILURE } from "./deliveries";
import { webhookBody } from "./envelope";
import { emailPayloadSchema } from "./events";
import { sendEmail } from "./send-email";
import { webhookHeaders } from "./signature";

/** How one attempt ended, before it is logged. */
export interface AttemptResult {
	outcome: AttemptOutcome;
	responseCode: number | null;
	error: string | null;
	/** A failure that no retry can fix (the message is acked, not retried). */
	permanent?: boolean;
}

export interface DeliveryOptions {
	/** Webhook attempt timeout: connecting, the answer's first byte (status and headers) and a failure's text. */
	timeoutMs: number;
	/** Sender when the app has none. */
	defaultSender: string;
	/** Unix seconds, for `webhook-timestamp`. */
	now?: () => number;
}

/**
 * A receiver that has not connected and answered (status and headers) by then
 * has failed, and its message is retried later with a delay. Short, because
 * the queue hands the consumer its next batch only when this one is done: a
 * hanging endpoint holds every other app's webhooks for at most this long
 * (twice, when the endpoints of more than five apps of one batch hang:
 * parallel.ts; docs/webhooks.md, "Delivery isolation"). The body of a 2xx is
 * never waited for.
 */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 1_500;
/** Response text kept in the attempt log, at most. */
const RESPONSE_SNIPPET_CHARS = 300;

const permanent = (error: string): AttemptResult => ({
	outcome: "failed",
	responseCode: null,
	error: PERMANENT_FAILURE + error,
	permanent: true,
});

function parsePayload(text: string): { ok: true; value: unknown } | { ok: false } {
	try {
		return { ok: true, value: JSON.parse(text) };
	} catch {
		return { ok: false };
	}
}

const redactedEmailSchema = z.object({ to: z.string(), subject: z.string(), text: z.string(), html: z.string() }).partial();

/**
 * Why an email must not be sent because an erasure redacted it (db/privacy.ts):
 * its recipient was erased (`to` emptied), or it speaks of an erased person
 * (a reminder naming its referrer), so what is left would say nothing. Null otherwise.
 */
function erasedRecipient(value: unknown): string | null {
	const email = redactedEmailSchema.safeParse(value);
	if (!email.success) return null;
	const { to, subject, text, html } = email.data;
	if (to === "") return "the recipient was erased";
	return [subject, text, html].some((part) => part?.includes(ERASED)) ? "the email names an erased person" : null;
}

/** Delivers one outbox event once: a signed webhook POST or an email. Never throws. */
export async function deliver(target: DeliveryTarget, env: Env, options: DeliveryOptions): Promise<AttemptResult> {
	const { event, app } = target;
	if (!app) return { outcome: "skipped", responseCode: null, error: "the app no longer exists" };
	const payload = parsePayload(event.payload);
	if (!payload.ok) return permanent("the stored payload is not JSON");
	try {
		if (event.kind === "webhook") {
			if (!app.webhookurl) return { outcome: "skipped", responseCode: null, error: "the app has no webhook URL" };
			// URLs stored before the policy existed are checked here too (the admin API checks new ones).
			const refused = webhookUrlProblem(app.webhookurl, webhookUrlPolicy(env));
			if (refused) return permanent(`webhook URL refused: it ${refused}`);
			const post = postWebhook(
				app.webhookurl,
				app.webhookSecret,
				event.eventid,
				webhookBody(event.type, event.created_at, payload.value, app.livemode),
				options,
			);
			return await withDeadline(post, options.timeoutMs + DEADLINE_GRACE_MS, () => timedOut(options.timeoutMs));
		}
		if (event.kind === "email") {
			const gone = erasedRecipient(payload.value);
			if (gone) return { outcome: "skipped", responseCode: null, error: gone };
			const email = emailPayloadSchema.safeParse(payload.value);
			if (!email.success)
				return permanent(`invalid email payload: ${email.error.issues.map((i) => i.path.join(".") || i.message).join(", ")}`);
			const { to, toName, subject, text, html } = email.data;
			await sendEmail(env, { from: app.emailsender || options.defaultSender, to, toName, subject, text, html });
			return { outcome: "delivered", responseCode: null, error: null };
		}
		return permanent(`unknown event kind '${event.kind}'`);
	} catch (err) {
		return { outcome: "failed", responseCode: null, error: describeError(err, options.timeoutMs) };
	}
}

async function postWebhook(url: string, secret: string, eventid: string, body: string, options: DeliveryOptions): Promise<AttemptResult> {
	const timestamp = options.now ? options.now() : Math.floor(Date.now() / 1000);
	const headers = await webhookHeaders(secret, eventid, timestamp, body);
	const signal = AbortSignal.timeout(options.timeoutMs);
	// Redirects are not followed: a 3xx is a failure, as Standard Webhooks senders do.
	const response = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal });
	if (response.ok) {
		await response.body?.cancel().catch(() => {});
		return { outcome: "delivered", responseCode: response.status, error: null };
	}
	if (response.status >= 300 && response.status < 400) {
		await response.body?.cancel().catch(() => {});
		const location = response.headers.get("location");
		return {
			outcome: "failed",
			responseCode: response.status,
			error: `HTTP ${response.status}: redirect${location ? ` to ${location.slice(0, 200)}` : ""} not followed (webhooks never follow redirects)`,
		};
	}
	const snippet = await readSnippet(response);
	return { outcome: "failed", responseCode: response.status, error: `HTTP ${response.status}${snippet ? `: ${snippet}` : ""}` };
}

async function readSnippet(response: Response): Promise<string> {
	try {
		const text = await response.text();
		return text.length > RESPONSE_SNIPPET_CHARS ? `${text.slice(0, RESPONSE_SNIPPET_CHARS)}...` : text;
	} catch {
		return "";
	}
}

/**
 * The attempt's own deadline, a little after its fetch's abort signal. The
 * signal is what ends a hanging request; this bounds the attempt even if a
 * fetch did not honour it, so one endpoint can never hold a consumer batch
 * (and every other app's webhooks behind it) for longer than the timeout. (A
 * CI run's log looked like a batch held for a hanging receiver's whole 120 s;
 * the cause was not found.)
 */
const DEADLINE_GRACE_MS = 250;

const timeoutText = (timeoutMs: number) => `timed out after ${timeoutMs} ms`;

/** True when an attempt failed because the endpoint did not answer within the timeout (the consumer defers its app's other messages). */
export const isTimeout = (result: AttemptResult) =>
	result.outcome === "failed" && result.responseCode === null && (result.error ?? "").startsWith("timed out");

const timedOut = (timeoutMs: number): AttemptResult => ({ outcome: "failed", responseCode: null, error: timeoutText(timeoutMs) });

async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	const deadline = new Promise<T>((resolve) => {
		timer = setTimeout(() => resolve(onTimeout()), ms);
	});
	try {
		return await Promise.race([work, deadline]);
	} finally {
		clearTimeout(timer);
	}
}

function describeError(err: unknown, timeoutMs: number): string {
	if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return timeoutText(timeoutMs);
	const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
	return text.slice(0, 500);
}
