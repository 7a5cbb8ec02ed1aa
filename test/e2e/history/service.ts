import { cpSync } from "node:fs";
import Stripe from "stripe";
import { startService } from "../../../scripts/dev-service.mjs";

/**
 * The history checker's side of the wire: one `wrangler dev` (shared by the
 * seeds of a run, each seed with an app of its own), killed with SIGKILL and
 * restarted on its state, and requests that never throw: no answer
 * (timeout, connection cut, the service killed) is status 0, an unknown
 * outcome.
 */

type Service = Awaited<ReturnType<typeof startService>>;
export interface Answer {
	status: number;
	body: Record<string, any> | null;
}

// Redrives and inbox resends after 3 s instead of 15 / 5 minutes: the run waits for them (docs/stripe.md). The Stripe
// client gives up after 1.5 s instead of 10 (the local Stripe's hung keys hold 2.5 s: a real client timeout), and a key
// lives 15 s instead of Stripe's 24 h, so a payout never answered becomes unknown and is resolved within the run.
const OPTIONS = {
	name: "history",
	vars: {
		STRIPE_REDRIVE_AFTER_MS: "3000",
		STRIPE_INBOX_RESEND_AFTER_MS: "3000",
		STRIPE_TIMEOUT_MS: "1500",
		STRIPE_KEY_LIFETIME_MS: "15000",
	},
	args: ["--test-scheduled"],
};

export interface Live {
	base(): string;
	adminToken(): string;
	/** `kill -9` of wrangler dev and workerd, then a start on the same state. */
	crash(): Promise<number>;
	logs(): string;
	stop(): Promise<void>;
}

export async function startLive(): Promise<Live> {
	const first = await startService(OPTIONS);
	let current: Service = first;
	return {
		base: () => current.base,
		adminToken: () => current.adminToken,
		logs: () => current.logs(),
		async crash() {
			const started = Date.now();
			await current.kill();
			// Another process may take the port freePort() chose before wrangler binds it (a shared machine):
			// "Address already in use" ended the 20-seed run once. Try another port, on the same state.
			for (let attempt = 1; ; attempt++) {
				try {
					current = await startService({ ...OPTIONS, persistTo: first.persist });
					return Date.now() - started;
				} catch (error) {
					if (attempt >= 3) throw error;
				}
			}
		},
		async stop() {
			// HISTORY_KEEP_STATE=<dir>: the run's state (D1, each ledger's SQLite) copied there for a look at what the checks saw.
			const keep = process.env.HISTORY_KEEP_STATE;
			if (keep) {
				await current.kill();
				cpSync(first.persist, keep, { recursive: true });
			}
			if (current !== first) await current.stop();
			await first.stop(); // removes the state
		},
	};
}

export async function request(
	live: Live,
	method: string,
	path: string,
	body?: unknown,
	headers: Record<string, string> = {},
): Promise<Answer> {
	try {
		const res = await fetch(`${live.base()}${path}`, {
			method,
			headers: { "content-type": "application/json", ...headers },
			...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
			signal: AbortSignal.timeout(30_000),
		});
		const text = await res.text();
		let json: Record<string, any> | null = null;
		try {
			json = JSON.parse(text);
		} catch {}
		return { status: res.status, body: json };
	} catch {
		return { status: 0, body: null };
	}
}

export const admin = (live: Live, method: string, path: string, body?: unknown) =>
	request(live, method, `/admin/v1${path}`, body, { authorization: `Bearer ${live.adminToken()}` });

const stripeLib = new Stripe("sk_test_unused");

/**
 * Posts a Stripe event signed as Stripe signs it (the official library's test header: HMAC-SHA256 of `t.payload`),
 * in the mode of its endpoint: `livemode` true to the live app's, false to its test twin's (`<appid>_test`).
 */
export function deliver(live: Live, endpoint: string, secret: string, event: Record<string, unknown>, livemode: boolean): Promise<Answer> {
	const payload = JSON.stringify({ ...event, livemode });
	const signature = stripeLib.webhooks.generateTestHeaderString({ payload, secret });
	return request(live, "POST", `/integrations/stripe/${endpoint}`, payload, { "stripe-signature": signature });
}

/** `invoice.paid` of a friend's invoice (the previous payload shape, naming its charge and payment intent). */
export function invoicePaidEvent(tag: string, friend: number, customer: string, amount: number) {
	const n = `${tag}_${friend}`;
	return {
		id: `evt_inv_${n}`,
		object: "event",
		type: "invoice.paid",
		created: Math.floor(Date.now() / 1000),
		data: {
			object: {
				id: `in_${n}`,
				object: "invoice",
				customer,
				amount_paid: amount,
				currency: "usd",
				charge: `ch_${n}`,
				payment_intent: `pi_${n}`,
			},
		},
	};
}

/** `charge.refunded` of that invoice's charge, `total` refunded so far. */
export function chargeRefundedEvent(tag: string, friend: number, customer: string, amount: number, total: number) {
	const n = `${tag}_${friend}`;
	return {
		id: `evt_ref_${n}_${total}`,
		object: "event",
		type: "charge.refunded",
		created: Math.floor(Date.now() / 1000),
		data: {
			object: { id: `ch_${n}`, object: "charge", customer, amount, amount_refunded: total, currency: "usd", payment_intent: `pi_${n}` },
		},
	};
}

/** A `charge.dispute.created` (`open`) or `charge.dispute.closed` (`won`, `lost`) of the friend's charge (issue 47). */
export function disputeEvent(tag: string, friend: number, amount: number, state: "open" | "won" | "lost") {
	const n = `${tag}_${friend}`;
	const object = {
		id: `dp_${n}`,
		object: "dispute",
		amount,
		currency: "usd",
		charge: `ch_${n}`,
		payment_intent: `pi_${n}`,
		reason: "fraudulent",
		status: state === "open" ? "needs_response" : state,
	};
	const type = state === "open" ? "charge.dispute.created" : "charge.dispute.closed";
	return { id: `evt_dp_${n}_${state}`, object: "event", type, created: Math.floor(Date.now() / 1000), data: { object } };
}
