import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real HTTP server on 127.0.0.1 playing the part of Stripe's API for the
 * end-to-end tests (the Worker's official `stripe` client is pointed at it
 * through the app's `apiurl`), and a webhook receiver for the service's own
 * events. It records every request with its Idempotency-Key and, like
 * Stripe, answers a repeated key with the first answer without doing it
 * again. Customers behave by name: `cus_missing` does not exist (404),
 * `cus_flaky...` fails once with a 500, then succeeds.
 */
export interface StripeCall {
	method: string;
	path: string;
	idempotencyKey: string | null;
	authorization: string | null;
	form: Record<string, string>;
	/** True when the answer was a replay of an earlier one under the same key. */
	replayed: boolean;
	status: number;
}

export interface FakeStripe {
	url: string;
	calls: StripeCall[];
	/** Balance transactions actually created (not replays), by customer. */
	created: { id: string; customer: string; amount: number; currency: string; idempotencyKey: string | null }[];
	/** The service's webhooks as received: `{type, timestamp, livemode, data}` (Standard Webhooks). */
	hooks: { type: string; livemode: boolean; data: Record<string, any> }[];
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

export async function startFakeStripe(): Promise<FakeStripe> {
	const calls: StripeCall[] = [];
	const created: FakeStripe["created"] = [];
	const hooks: FakeStripe["hooks"] = [];
	const answered = new Map<string, { status: number; json: unknown }>();
	const failedOnce = new Set<string>();
	let next = 1;
	const server: Server = createServer(async (req, res) => {
		const text = await body(req);
		const path = new URL(req.url ?? "/", "http://x").pathname;
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
		const earlier = key ? answered.get(key) : undefined;
		if (earlier) {
			call.replayed = true;
			call.status = earlier.status;
			return send(earlier.status, earlier.json);
		}
		const match = /^\/v1\/customers\/([^/]+)\/balance_transactions$/.exec(path);
		if (req.method !== "POST" || !match) {
			call.status = 404;
			return send(404, { error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } });
		}
		const customer = decodeURIComponent(match[1] ?? "");
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
			created.push({ id: transaction.id, customer, amount: transaction.amount, currency: transaction.currency ?? "", idempotencyKey: key });
			answer = { status: 200, json: transaction };
		}
		if (key) answered.set(key, answer);
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
		close: () => new Promise((resolve) => server.close(() => resolve())),
	};
}
