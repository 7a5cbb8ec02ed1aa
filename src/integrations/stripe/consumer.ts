import { z } from "zod";
import { payoutMessageSchema } from "../../ledger/payouts";
import { stripeEventMessageSchema } from "./events";
import { runStripeEvent } from "./handle";
import { runPayout } from "./payouts";

/**
 * Consumer of the Stripe queue (wrangler.toml `referral-stripe`): payouts of
 * rewards and the events Stripe sent. Each message is acked or retried on
 * its own; a retry waits longer each time (5 s, 15 s, 45 s, ... up to 15
 * minutes) and keeps its Idempotency-Key, and after the last one the message
 * goes to the dead-letter queue.
 */
const messageSchema = z.union([payoutMessageSchema, stripeEventMessageSchema]);

export const stripeRetryDelaySeconds = (attempts: number) => Math.min(5 * 3 ** Math.max(0, attempts - 1), 900);

/**
 * The batch's messages run side by side, each settled on its own: they are
 * independent (each payout is its own record and key, each ledger the single
 * writer of its records), and the pace of requests to Stripe is the
 * account's governor's to keep (pace.ts), not the batch's order.
 */
export async function stripeQueue(batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext): Promise<void> {
	await Promise.all(batch.messages.map((message) => settleMessage(message, env, ctx)));
}

async function settleMessage(message: Message<unknown>, env: Env, ctx: ExecutionContext): Promise<void> {
	const parsed = messageSchema.safeParse(message.body);
	if (!parsed.success) {
		console.error(JSON.stringify({ msg: "stripe queue: invalid message, dropped", id: message.id }));
		message.ack();
		return;
	}
	try {
		const body = parsed.data;
		const settle =
			"payout" in body ? await runPayout(env, body.payout) : await runStripeEvent(env, body.stripeEvent, (p) => ctx.waitUntil(p));
		if (settle === "ack") message.ack();
		else if (settle === "retry") message.retry({ delaySeconds: stripeRetryDelaySeconds(message.attempts) });
		else {
			// Paced by the Stripe account's governor (pace.ts): sent again for later as a new message, so waiting
			// for the account's rate never uses up the message's retries.
			await env.STRIPE_WORK.send(message.body, { delaySeconds: Math.min(900, Math.max(1, Math.ceil(settle.defer / 1000))) });
			message.ack();
		}
	} catch (error) {
		console.error(JSON.stringify({ msg: "stripe queue: work failed, retried", id: message.id, error: String(error) }));
		message.retry({ delaySeconds: stripeRetryDelaySeconds(message.attempts) });
	}
}
