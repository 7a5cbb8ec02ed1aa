import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import { insertOutboxEvent } from "../../src/db/outbox-events";
import type { EmailPayload, OutboxEvent, WebhookType } from "../../src/domain/outbox-event";
import { withBindings } from "../../src/instrument/d1-metrics";
import { queue } from "../../src/outbox/consumer";
import { outboxMessageSchema, webhookEvent } from "../../src/outbox/events";
import { admin, type Credentials } from "../support/api";

/** One request the real receiver (test/outbox/receiver.mjs) got. */
export interface Received {
	method: string;
	path: string;
	headers: Record<string, string>;
	body: string;
	at: number;
}

export interface Answer {
	status?: number;
	delayMs?: number;
	body?: string;
}

let counter = 0;
/** A receiver key of its own for each test, so parallel test files never mix. */
export const uniqueKey = (name: string) => `${name}-${Date.now().toString(36)}-${++counter}-${crypto.randomUUID().slice(0, 8)}`;

export const hookUrl = (key: string) => `${env.WEBHOOK_RECEIVER_URL}/hooks/${encodeURIComponent(key)}`;

export async function setAnswers(key: string, sequence: Answer[], fallback: Answer = {}): Promise<void> {
	const res = await fetch(`${env.WEBHOOK_RECEIVER_URL}/__mode/${encodeURIComponent(key)}`, {
		method: "POST",
		body: JSON.stringify({ sequence, default: fallback }),
	});
	if (!res.ok) throw new Error(`receiver mode: ${res.status}`);
}

export async function received(key: string): Promise<Received[]> {
	const res = await fetch(`${env.WEBHOOK_RECEIVER_URL}/__received/${encodeURIComponent(key)}`);
	return (await res.json()) as Received[];
}

/** Polls the receiver until `key` got `count` requests (for deliveries through the real queue). */
export async function waitForReceived(key: string, count = 1, timeoutMs = 10_000): Promise<Received[]> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const got = await received(key);
		if (got.length >= count) return got;
		if (Date.now() > deadline) throw new Error(`receiver ${key}: ${got.length} of ${count} requests after ${timeoutMs} ms`);
		await new Promise((r) => setTimeout(r, 50));
	}
}

/** An app made through the admin API, with its webhook pointed at the receiver under `key` (or none). */
export async function createOutboxApp(app: { webhookurl?: string | null; emailsender?: string | null } = {}): Promise<Credentials> {
	const created = await admin<Credentials>("POST", "/apps", { name: "Outbox test app", ...app });
	if (created.status !== 201) throw new Error(`app create failed: ${JSON.stringify(created.body)}`);
	return created.body;
}

/** Records an event in the D1 outbox as a producer would (without enqueueing it). */
export async function recordEvent(event: OutboxEvent, overrides: { createdAt?: string } = {}): Promise<OutboxEvent> {
	const stored = { ...event, ...(overrides.createdAt ? { createdAt: overrides.createdAt } : {}) } as OutboxEvent;
	await insertOutboxEvent(env.DB, stored).run();
	return stored;
}

export function recordWebhook(
	appid: string,
	type: WebhookType = "reward.created",
	payload: Record<string, unknown> = { rewarddtlid: "r_1", reward: 10 },
) {
	return recordEvent(webhookEvent(appid, type, payload));
}

export function recordEmail(appid: string, payload: EmailPayload) {
	return recordEvent({
		eventid: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
		appid,
		kind: "email",
		type: "email.outreach",
		payload,
		createdAt: new Date().toISOString(),
	});
}

export interface Delivery {
	body: unknown;
	attempts?: number;
	id?: string;
}

/** Runs the consumer on one batch, as the platform would, and returns what it acked and retried. */
export async function runBatch(messages: Delivery[], runEnv: Env = env, now?: () => number) {
	const batch = createMessageBatch(
		"referral-outbox",
		messages.map((m, i) => ({
			id: m.id ?? `m${i}-${crypto.randomUUID()}`,
			timestamp: new Date(),
			attempts: m.attempts ?? 1,
			body: m.body,
		})),
	);
	// getQueueResult() reports which messages were retried but not the delay asked for: watch retry() for that.
	const retrySpies = batch.messages.map((m) => vi.spyOn(m, "retry"));
	const ctx = createExecutionContext();
	await queue(batch, runEnv, ctx, now);
	const result = await getQueueResult(batch, ctx);
	const retries = batch.messages.flatMap((m, i) =>
		retrySpies[i]!.mock.calls.map(([options]) => ({ msgId: m.id, delaySeconds: options?.delaySeconds })),
	);
	return { batch, result, retries, ids: batch.messages.map((m) => m.id) };
}

export interface AttemptRow {
	eventid: string;
	attempt: number;
	outcome: string;
	response_code: number | null;
	duration_ms: number;
	error: string | null;
}

export async function attemptsOf(eventid: string): Promise<AttemptRow[]> {
	const { results } = await env.DB.prepare("SELECT * FROM delivery_attempts WHERE eventid = ? ORDER BY attemptid")
		.bind(eventid)
		.all<AttemptRow>();
	return results;
}

export async function eventRow(eventid: string) {
	return env.DB.prepare("SELECT * FROM outbox_events WHERE eventid = ?")
		.bind(eventid)
		.first<{ delivered_at: string | null; enqueued_at: string | null }>();
}

/**
 * A D1 binding that records each round trip (a batch is one) with the SQL it
 * ran, so a test can check how many round trips a piece of work takes.
 */
export function recordingDb(db: D1Database = env.DB): { db: D1Database; trips: string[][] } {
	const trips: string[][] = [];
	const sqlOf = new WeakMap<object, string>();
	const real = new WeakMap<object, D1PreparedStatement>();
	const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
				const value = Reflect.get(target, prop);
				if (typeof value !== "function") return value;
				if (["first", "run", "all", "raw"].includes(String(prop))) {
					return (...args: unknown[]) => {
						trips.push([sql]);
						return value.apply(target, args);
					};
				}
				return value.bind(target);
			},
		});
		sqlOf.set(proxy, sql);
		real.set(proxy, statement);
		return proxy;
	};
	const proxy = new Proxy(db, {
		get(target, prop) {
			if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) => {
					trips.push(statements.map((s) => sqlOf.get(s) ?? "?"));
					return target.batch(statements.map((s) => real.get(s) ?? s));
				};
			}
			const value = Reflect.get(target, prop);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return { db: proxy, trips };
}

/** An OUTBOX binding that records the bodies it is given instead of queueing them; `sent` lists their event ids. */
export function recordingQueue() {
	const bodies: { eventid: string; logged?: unknown }[] = [];
	const metrics = { backlogCount: 0, backlogBytes: 0 };
	const queue: Queue = {
		metrics: async () => metrics,
		send: async (body) => {
			bodies.push(outboxMessageSchema.parse(body));
			return { metadata: { metrics } };
		},
		sendBatch: async (messages) => {
			for (const m of messages) bodies.push(outboxMessageSchema.parse(m.body));
			return { metadata: { metrics } };
		},
	};
	return {
		bodies,
		get sent() {
			return bodies.map((b) => b.eventid);
		},
		runEnv: { ...env, OUTBOX: queue },
	};
}

/**
 * A D1 binding on which every statement whose SQL `fails` matches throws, and
 * so does any batch holding one (a batch is one transaction: nothing of it is
 * written), as when D1 refuses a write.
 */
export function faultyDb(fails: (sql: string) => boolean, db: D1Database = env.DB): D1Database {
	const failing = new WeakSet<object>();
	const real = new WeakMap<object, D1PreparedStatement>();
	const refused = () => Promise.reject(new Error("D1_ERROR: injected failure"));
	const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, prop) {
				if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
				const value = Reflect.get(target, prop);
				if (typeof value !== "function") return value;
				if (fails(sql) && ["first", "run", "all", "raw"].includes(String(prop))) return refused;
				return value.bind(target);
			},
		});
		if (fails(sql)) failing.add(proxy);
		real.set(proxy, statement);
		return proxy;
	};
	return new Proxy(db, {
		get(target, prop) {
			if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
			if (prop === "batch") {
				return (statements: D1PreparedStatement[]) =>
					statements.some((s) => failing.has(s)) ? refused() : target.batch(statements.map((s) => real.get(s) ?? s));
			}
			const value = Reflect.get(target, prop);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

/**
 * The email binding, recorded: a spy on a binding of the test's own that hands each message to the real (simulated)
 * one, in an env to pass to runBatch. Not a spy on the shared env's binding, which other files' work can reach.
 */
export function recordedEmail() {
	const real = env.EMAIL;
	const email: SendEmail = { send: (message: EmailMessage & EmailMessageBuilder) => real.send(message) };
	const send = vi.spyOn(email, "send");
	return { send, runEnv: withBindings(env, { EMAIL: email }) };
}
