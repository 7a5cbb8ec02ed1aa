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
 * `chaos` (the history checker, test/e2e/history/) makes it
 * misbehave on a seeded schedule as Stripe can: latency, a 500 that did
 * nothing, and a request applied but never answered (the connection cut
 * after `lateMs`: to the caller a timeout, an unknown outcome).
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
}

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
}

export interface FakeStripe {
	url: string;
	calls: StripeCall[];
	/** Balance transactions actually created (not replays), by customer. */
	created: { id: string; customer: string; amount: number; currency: string; idempotencyKey: string | null; rewarddtlid: string }[];
	/** The service's webhooks as received: `{type, timestamp, livemode, data}` (Standard Webhooks). */
	hooks: { type: string; livemode: boolean; data: Record<string, any> }[];
	/** Every amount each Idempotency-Key was sent with (one each, when the service is right). */
	keyAmounts: Map<string, Set<number>>;
	/** Requests for `customer` wait (after being recorded) until release(customer); `arrived` resolves at the first. */
	hold(customer: string): { arrived: Promise<void> };
	release(customer: string): void;
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

export async function startFakeStripe(chaos?: StripeChaos): Promise<FakeStripe> {
	const random = seededRandom(chaos?.seed ?? 1);
	const calls: StripeCall[] = [];
	const created: FakeStripe["created"] = [];
	const hooks: FakeStripe["hooks"] = [];
	const answered = new Map<string, { status: number; json: unknown }>();
	const failedOnce = new Set<string>();
	const keyAmounts = new Map<string, Set<number>>();
	const holds = new Map<string, { arrived: () => void; released: Promise<void>; release: () => void }>();
	const failures = new Map<string, { count: number; status: number }>();
	const promotionCodes = new Map<string, Pick<Stripe.PromotionCode, "id" | "object" | "code" | "active">>();
	const invoices = new Map<
		string,
		{ id: string; discounts: Pick<Stripe.Discount, "id" | "object" | "promotion_code">[] } & Record<string, unknown>
	>();
	let next = 1;
	const server: Server = createServer(async (req, res) => {
		const text = await body(req);
		const url = new URL(req.url ?? "/", "http://x");
		const path = url.pathname;
		const send = (status: number, json: unknown) => {
			res.writeHead(status, { "content-type": "application/json", "request-id": `req_${next}` });
			res.end(JSON.stringify(json));
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
		};
		calls.push(call);
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
		// One draw decides this request's fate; latency comes from a second.
		const draw = chaos && match ? random() : 1;
		if (chaos && match) await sleep(Math.floor(random() * chaos.maxLatencyMs));
		if (chaos && draw < chaos.fail5xx) {
			call.status = 500;
			return send(500, { error: { type: "api_error", message: "Injected server error." } });
		}
		const cut = chaos !== undefined && draw < chaos.fail5xx + chaos.late;
		const failure = failures.get(customer);
		if (failure && failure.count > 0) {
			failure.count--;
			call.status = failure.status;
			return send(failure.status, { error: { type: "api_error", message: "Injected failure." } });
		}
		const earlier = key ? answered.get(key) : undefined;
		if (earlier && key && (keyAmounts.get(key)?.size ?? 0) > 1) {
			call.status = 400;
			return send(400, {
				error: { type: "idempotency_error", message: "Keys for idempotent requests can only be used with the same parameters." },
			});
		}
		if (earlier) {
			call.replayed = true;
			call.status = earlier.status;
			return send(earlier.status, earlier.json);
		}
		if (req.method !== "POST" || !match) {
			call.status = 404;
			return send(404, { error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } });
		}
		if (customer.startsWith("cus_flaky") && !failedOnce.has(customer)) {
			// A 500 is not remembered under its key: Stripe lets the same key be tried again after a server error.
			failedOnce.add(customer);
			call.status = 500;
			return send(500, { error: { type: "api_error", message: "Something went wrong on Stripe's end." } });
		}
		let answer: { status: number; json: unknown };
		if (customer === "cus_missing") {
			answer = {
				status: 404,
				json: {
					error: { type: "invalid_request_error", code: "resource_missing", message: `No such customer: '${customer}'`, param: "customer" },
				},
			};
		} else {
			const transaction = {
				id: `cbtxn_${next++}`,
				object: "customer_balance_transaction",
				amount: Number(form.amount),
				currency: form.currency,
				customer,
				description: form.description,
				metadata: { rewarddtlid: form["metadata[rewarddtlid]"] },
				type: "adjustment",
			};
			created.push({
				id: transaction.id,
				customer,
				amount: transaction.amount,
				currency: transaction.currency ?? "",
				idempotencyKey: key,
				rewarddtlid: form["metadata[rewarddtlid]"] ?? "",
			});
			answer = { status: 200, json: transaction };
		}
		if (key) answered.set(key, answer);
		if (cut && chaos) {
			// Applied, then answered too late: the caller gives up (or the connection drops) without knowing.
			call.status = -1;
			await sleep(chaos.lateMs);
			res.destroy();
			return;
		}
		call.status = answer.status;
		return send(answer.status, answer.json);
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
