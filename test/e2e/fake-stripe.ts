import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type Stripe from "stripe";
import { seededRandom } from "./history/prng";

/**
 * A real HTTP server on 127.0.0.1 playing the part of Stripe's API for the
 * end-to-end tests (the Worker's official `stripe` client is pointed at it
 * through the app's `apiurl`), and a webhook receiver for the service's own
 * events. It records every request with its Idempotency-Key and, like
 * Stripe, answers a repeated key with the first answer without doing it
 * again; a key sent again with another amount is refused 400
 * `idempotency_error`, as Stripe does. Customers behave by name:
 * `cus_missing` does not exist (404), `cus_flaky...` fails once with a 500,
 * then succeeds. Tests can also hold a customer's requests until released
 * (a payout in flight), fail the next ones with a status, and read each
 * customer's net. It also knows the promotion codes and invoices a test
 * gives it (`GET /v1/promotion_codes/{id}`, `GET /v1/invoices/{id}` with or
 * without `expand[]=discounts`), answered as Stripe's API types them.
 * Like Stripe, it compares a repeated key's request with the first one
 * (path and every parameter) and answers 409 `idempotency_key_in_use` to a
 * request whose key is still being handled. `chaos` (the history checker,
 * test/e2e/history/) makes it misbehave on a seeded schedule as Stripe can:
 * latency, a 500 that did nothing, a request applied but never answered
 * (the connection cut after `lateMs`: to the caller a timeout, an unknown
 * outcome), a 429 `rate_limit` (before the idempotency layer, so not
 * remembered, with `Stripe-Should-Retry: true`), and final refusals of a
 * new key that Stripe remembers under it: 402 `balance_insufficient` and
 * 404 `resource_missing` (the customer). `GET /v1/customers/{id}/balance_transactions`
 * lists a customer's balance transactions newest first, with their metadata
 * and `created`, paged by `limit` and `starting_after` as Stripe pages them.
 * `silence` makes a customer's next payout go unanswered for good: applied
 * once or never, every attempt of its key held past the client's timeout.
 */
export interface StripeCall {
	method: string;
	path: string;
	idempotencyKey: string | null;
	authorization: string | null;
	form: Record<string, string>;
	/** True when the answer was a replay of an earlier one under the same key. */
	replayed: boolean;
	/** The status answered; -1 when the request was applied and its connection cut instead (chaos). */
	status: number;
	/** Stripe's error code when the answer was an error (`rate_limit`, `resource_missing`, ...). */
	code: string | null;
	/** The `Request-Id` header answered (unique per request, as Stripe's). */
	requestId: string;
	/** When it arrived (ms since the epoch). */
	at: number;
}

/** Answers a retry under the same key may change (Stripe's own SDK retries them): 5xx, 409, 429, and no answer (-1). */
export const retryableStatus = (status: number) => status === -1 || status === 409 || status === 429 || status >= 500;

/** Seeded misbehaviour of the balance transactions endpoint (each request draws once). */
export interface StripeChaos {
	seed: number;
	/** Chance of a 500 that does nothing (not remembered under its key, as Stripe does after a server error). */
	fail5xx: number;
	/** Chance of a request applied (and remembered) whose answer never comes: the connection is cut after `lateMs`. */
	late: number;
	lateMs: number;
	/** Each request waits up to this long before it is handled. */
	maxLatencyMs: number;
	/** Chance of a 429 `rate_limit` (not applied, not remembered: Stripe's rate limiter runs before its idempotency layer). */
	rateLimit?: number;
	/** Chance that a new key is refused for good (402 `balance_insufficient` or 404 `resource_missing`), remembered under it. */
	refuse?: number;
	/**
	 * Chance that a new key is never answered: applied or not (half each), every attempt of it held `hangMs`
	 * (past the client's timeout: a real client timeout) and then cut, so its outcome stays unknown to the service
	 * until it looks it up in the customer's balance transactions (issue 47).
	 */
	hang?: number;
	hangMs?: number;
}

export interface FakeStripe {
	url: string;
	calls: StripeCall[];
	/** Balance transactions actually created (not replays), by customer. */
	created: {
		id: string;
		customer: string;
		amount: number;
		currency: string;
		idempotencyKey: string | null;
		rewarddtlid: string;
		metadata: Record<string, string>;
		/** Seconds since the epoch, as Stripe's `created`. */
		created: number;
	}[];
	/** The service's webhooks as received: `{type, timestamp, livemode, data}` (Standard Webhooks). */
	hooks: { type: string; livemode: boolean; data: Record<string, any> }[];
	/** Every amount each Idempotency-Key was sent with (one each, when the service is right). */
	keyAmounts: Map<string, Set<number>>;
	/** Requests for `customer` wait (after being recorded) until release(customer); `arrived` resolves at the first. */
	hold(customer: string): { arrived: Promise<void> };
	release(customer: string): void;
	/**
	 * The next new key sent for `customer` is never answered: applied once (`applied`) or never, and every
	 * request with that key held `holdMs` (past the client's timeout), then its connection cut.
	 */
	silence(customer: string, options: { applied: boolean; holdMs: number }): void;
	/** The next `count` requests for `customer` answer `status` without doing anything (not remembered under their key). */
	failNext(customer: string, count: number, status?: number): void;
	/** Sum of the balance transactions created for `customer` (minor units; negative: credited). */
	net(customer: string): number;
	/** A promotion code carrying `code`; answers its id (`promo_...`). */
	promotionCode(code: string): string;
	/** An invoice `GET /v1/invoices/{id}` answers: its discounts as ids, or as Stripe.Discount objects with `expand[]=discounts`. */
	invoice(invoice: { id: string; discounts: Pick<Stripe.Discount, "id" | "object" | "promotion_code">[] } & Record<string, unknown>): void;
	close(): Promise<void>;
}

const body = (req: IncomingMessage) =>
	new Promise<string>((resolve, reject) => {
		let text = "";
		req.setEncoding("utf8");
		req.on("data", (chunk: string) => {
			text += chunk;
		});
		req.on("end", () => resolve(text));
		req.on("error", reject);
	});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Stripe's per-account rate limit: more than `perSecond` API requests in any 1 s window are answered 429 `rate_limit`. */
export interface StripeLimit {
	perSecond: number;
}

export async function startFakeStripe(chaos?: StripeChaos, limit?: StripeLimit): Promise<FakeStripe> {
	const random = seededRandom(chaos?.seed ?? 1);
	const calls: StripeCall[] = [];
	const created: FakeStripe["created"] = [];
	const hooks: FakeStripe["hooks"] = [];
	const answered = new Map<string, { status: number; json: unknown; code: string | null }>();
	const failedOnce = new Set<string>();
	const keyAmounts = new Map<string, Set<number>>();
	/** The first request of each key (path and parameters), which Stripe compares a repeated key's requests with. */
	const keyRequests = new Map<string, string>();
	/** Keys of requests being handled now: another request with one of them is answered 409, as Stripe does. */
	const inFlight = new Set<string>();
	const holds = new Map<string, { arrived: () => void; released: Promise<void>; release: () => void }>();
	const failures = new Map<string, { count: number; status: number }>();
	const promotionCodes = new Map<string, Pick<Stripe.PromotionCode, "id" | "object" | "code" | "active">>();
	const invoices = new Map<
		string,
		{ id: string; discounts: Pick<Stripe.Discount, "id" | "object" | "promotion_code">[] } & Record<string, unknown>
	>();
	const window: number[] = [];
	const silences = new Map<string, { applied: boolean; holdMs: number; key: string | null }>();
	let next = 1;
	let requests = 0;
	/** Creates a balance transaction from the request's form; answers it as Stripe does. */
	const record = (customer: string, form: Record<string, string>, key: string | null) => {
		const metadata = Object.fromEntries(
			Object.entries(form)
				.filter(([k]) => k.startsWith("metadata["))
				.map(([k, v]) => [k.slice("metadata[".length, -1), v]),
		);
		const transaction = {
			id: `cbtxn_${next++}`,
			object: "customer_balance_transaction",
			amount: Number(form.amount),
			currency: form.currency,
			customer,
			created: Math.floor(Date.now() / 1000),
			description: form.description,
			metadata,
			type: "adjustment",
		};
		created.push({
			id: transaction.id,
			customer,
			amount: transaction.amount,
			currency: transaction.currency ?? "",
			idempotencyKey: key,
			rewarddtlid: metadata.rewarddtlid ?? "",
			metadata,
			created: transaction.created,
		});
		return transaction;
	};
	const server: Server = createServer(async (req, res) => {
		const text = await body(req);
		const url = new URL(req.url ?? "/", "http://x");
		const path = url.pathname;
		const requestId = `req_${++requests}`;
		const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
			res.writeHead(status, { "content-type": "application/json", "request-id": requestId, ...headers });
			res.end(JSON.stringify(json));
		};
		/** An error answer as Stripe shapes it, recorded on the call. */
		const refuse = (status: number, error: { type: string; code?: string; message: string; param?: string }, headers = {}) => {
			call.status = status;
			call.code = error.code ?? null;
			return send(status, { error: { ...error, request_log_url: `https://dashboard.stripe.com/logs/${requestId}` } }, headers);
		};
		if (path.startsWith("/hooks")) {
			const envelope = JSON.parse(text) as { type: string; livemode: boolean; data: Record<string, any> };
			hooks.push({ type: envelope.type, livemode: envelope.livemode, data: envelope.data });
			return send(200, { ok: true });
		}
		const key = (req.headers["idempotency-key"] as string | undefined) ?? null;
		const form = Object.fromEntries(new URLSearchParams(text));
		const call: StripeCall = {
			method: req.method ?? "",
			path,
			idempotencyKey: key,
			authorization: (req.headers.authorization as string | undefined) ?? null,
			form,
			replayed: false,
			status: 0,
			code: null,
			requestId,
			at: Date.now(),
		};
		calls.push(call);
		if (limit) {
			// A sliding 1 s window of the requests Stripe took (answered 429 ones do not count), before anything else runs.
			while (window.length > 0 && (window[0] ?? 0) <= call.at - 1000) window.shift();
			if (window.length >= limit.perSecond) {
				return refuse(429, { type: "invalid_request_error", code: "rate_limit", message: "Too many requests hit the API too quickly." });
			}
			window.push(call.at);
		}
		const listing = /^\/v1\/customers\/([^/]+)\/balance_transactions$/.exec(path);
		if (req.method === "GET" && listing) {
			const who = decodeURIComponent(listing[1] ?? "");
			const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 10));
			const after = url.searchParams.get("starting_after");
			const mine = created.filter((t) => t.customer === who).reverse();
			const from = after ? mine.findIndex((t) => t.id === after) + 1 : 0;
			const page = mine.slice(from, from + limit);
			call.status = 200;
			return send(200, {
				object: "list",
				url: path,
				has_more: from + limit < mine.length,
				data: page.map((t) => ({
					id: t.id,
					object: "customer_balance_transaction",
					amount: t.amount,
					currency: t.currency,
					customer: t.customer,
					created: t.created,
					metadata: t.metadata,
					type: "adjustment",
				})),
			});
		}
		if (req.method === "GET") {
			const [, kind, id = ""] = /^\/v1\/(promotion_codes|invoices)\/([^/]+)$/.exec(path) ?? [];
			const missing = { error: { type: "invalid_request_error", code: "resource_missing", message: `No such object: '${id}'` } };
			const promotion = kind === "promotion_codes" ? promotionCodes.get(decodeURIComponent(id)) : undefined;
			const invoice = kind === "invoices" ? invoices.get(decodeURIComponent(id)) : undefined;
			call.status = promotion || invoice ? 200 : 404;
			if (promotion) return send(200, promotion);
			if (!invoice) return send(404, missing);
			// Stripe lists an invoice's discounts as ids unless asked to expand them.
			const expand = [...url.searchParams.entries()].some(([k, v]) => k.startsWith("expand") && v === "discounts");
			return send(200, { ...invoice, discounts: expand ? invoice.discounts : invoice.discounts.map((d) => d.id) });
		}
		const match = /^\/v1\/customers\/([^/]+)\/balance_transactions$/.exec(path);
		const customer = decodeURIComponent(match?.[1] ?? "");
		const held = holds.get(customer);
		if (held) {
			held.arrived();
			await held.released;
		}
		if (key && match) {
			const amounts = keyAmounts.get(key) ?? new Set<number>();
			amounts.add(Number(form.amount));
			keyAmounts.set(key, amounts);
		}
		const tracked = key && match ? key : null;
		if (tracked && inFlight.has(tracked)) {
			return refuse(
				409,
				{
					type: "idempotency_error",
					code: "idempotency_key_in_use",
					message:
						"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice). Try again later.",
				},
				{ "stripe-should-retry": "true" },
			);
		}
		const silent = silences.get(customer) ?? (tracked ? silences.get(`key:${tracked}`) : undefined);
		if (silent && tracked && req.method === "POST" && (silent.key === null || silent.key === tracked)) {
			// Never answered: applied the first time when asked, then held past the client's timeout and cut.
			if (silent.key === null) {
				silent.key = tracked;
				if (silent.applied) record(customer, form, key);
			}
			call.status = -1;
			await sleep(silent.holdMs);
			res.destroy();
			return;
		}
		if (tracked) inFlight.add(tracked);
		try {
			// One draw decides this request's fate; latency comes from a second.
			const draw = chaos && match ? random() : 1;
			if (chaos && match) await sleep(Math.floor(random() * chaos.maxLatencyMs));
			const late = chaos ? chaos.fail5xx + chaos.late : 0;
			const limited = chaos ? late + (chaos.rateLimit ?? 0) : 0;
			const refused = chaos ? limited + (chaos.refuse ?? 0) : 0;
			const hung = chaos ? refused + (chaos.hang ?? 0) : 0;
			if (chaos && tracked && draw >= refused && draw < hung && !answered.has(tracked)) {
				// From now on every attempt of this key hangs (silences, above); this one too.
				silences.set(`key:${tracked}`, { applied: random() < 0.5, holdMs: chaos.hangMs ?? 2_500, key: tracked });
				const silent = silences.get(`key:${tracked}`);
				if (silent?.applied) record(customer, form, key);
				inFlight.delete(tracked);
				call.status = -1;
				await sleep(silent?.holdMs ?? 0);
				res.destroy();
				return;
			}
			if (chaos && draw < chaos.fail5xx) return refuse(500, { type: "api_error", message: "Injected server error." });
			const cut = chaos !== undefined && draw < late;
			if (chaos && draw >= late && draw < limited) {
				// Stripe's rate limiter answers before its idempotency layer: nothing done, nothing remembered.
				return refuse(
					429,
					{ type: "invalid_request_error", code: "rate_limit", message: "Too many requests hit the API too quickly." },
					{ "stripe-should-retry": "true" },
				);
			}
			const failure = failures.get(customer);
			if (failure && failure.count > 0) {
				failure.count--;
				return refuse(failure.status, { type: "api_error", message: "Injected failure." });
			}
			const earlier = key ? answered.get(key) : undefined;
			const signature = JSON.stringify([req.method, path, Object.entries(form).sort()]);
			if (earlier && key && keyRequests.get(key) !== signature) {
				return refuse(400, {
					type: "idempotency_error",
					message: "Keys for idempotent requests can only be used with the same parameters they were first used with.",
				});
			}
			if (earlier) {
				call.replayed = true;
				call.status = earlier.status;
				call.code = earlier.code;
				return send(earlier.status, earlier.json, { "idempotent-replayed": "true" });
			}
			if (req.method !== "POST" || !match) {
				return refuse(404, { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` });
			}
			if (customer.startsWith("cus_flaky") && !failedOnce.has(customer)) {
				// A 500 is not remembered under its key: Stripe lets the same key be tried again after a server error.
				failedOnce.add(customer);
				return refuse(500, { type: "api_error", message: "Something went wrong on Stripe's end." });
			}
			const refusal = (code: "balance_insufficient" | "resource_missing") => {
				const error =
					code === "resource_missing"
						? { type: "invalid_request_error", code, message: `No such customer: '${customer}'`, param: "customer" }
						: { type: "invalid_request_error", code, message: `The balance of customer '${customer}' cannot take this adjustment.` };
				return { status: code === "resource_missing" ? 404 : 402, code, json: { error } };
			};
			let answer: { status: number; json: unknown; code: string | null };
			if (customer === "cus_missing") {
				answer = refusal("resource_missing");
			} else if (chaos && draw >= limited && draw < refused) {
				// Refused for good once the endpoint ran: Stripe remembers the refusal under the key.
				answer = refusal(draw < (limited + refused) / 2 ? "balance_insufficient" : "resource_missing");
			} else {
				answer = { status: 200, json: record(customer, form, key), code: null };
			}
			if (key) {
				answered.set(key, answer);
				keyRequests.set(key, signature);
			}
			if (cut && chaos) {
				// Applied, then answered too late: the caller gives up (or the connection drops) without knowing.
				if (tracked) inFlight.delete(tracked);
				call.status = -1;
				call.code = answer.code;
				await sleep(chaos.lateMs);
				res.destroy();
				return;
			}
			call.status = answer.status;
			call.code = answer.code;
			return send(answer.status, answer.json);
		} finally {
			if (tracked) inFlight.delete(tracked);
		}
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		calls,
		created,
		hooks,
		keyAmounts,
		hold(customer) {
			let arrived = () => {};
			const arrival = new Promise<void>((resolve) => {
				arrived = resolve;
			});
			let release = () => {};
			const released = new Promise<void>((resolve) => {
				release = resolve;
			});
			holds.set(customer, { arrived, released, release });
			return { arrived: arrival };
		},
		release(customer) {
			holds.get(customer)?.release();
			holds.delete(customer);
		},
		silence(customer, options) {
			silences.set(customer, { ...options, key: null });
		},
		failNext(customer, count, status = 500) {
			failures.set(customer, { count, status });
		},
		promotionCode(code) {
			const id = `promo_${next++}`;
			promotionCodes.set(id, { id, object: "promotion_code", code, active: true });
			return id;
		},
		invoice(invoice) {
			invoices.set(invoice.id, invoice);
		},
		net: (customer) => created.filter((t) => t.customer === customer).reduce((sum, t) => sum + t.amount, 0),
		close: () =>
			new Promise((resolve) => {
				server.close(() => resolve());
				// The service may still hold keep-alive connections (the history checker closes it while wrangler dev runs on).
				server.closeAllConnections();
			}),
	};
}
