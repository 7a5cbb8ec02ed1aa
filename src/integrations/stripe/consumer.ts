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

export async function stripeQueue(batch: MessageBatch<unknown>, env: Env, ctx: ExecutionContext): Promise<void> {
	for (const message of batch.messages) {
		const parsed = messageSchema.safeParse(message.body);
		if (!parsed.success) {
			console.error(JSON.stringify({ msg: "stripe queue: invalid message, dropped", id: message.id }));
			message.ack();
			continue;
		}
		try {
			const body = parsed.data;
			const settle =
				"payout" in body ? await runPayout(env, body.payout) : await runStripeEvent(env, body.stripeEvent, (p) => ctx.waitUntil(p));
			if (settle === "ack") message.ack();
			else message.retry({ delaySeconds: stripeRetryDelaySeconds(message.attempts) });
		} catch (error) {
			console.error(JSON.stringify({ msg: "stripe queue: work failed, retried", id: message.id, error: String(error) }));
			message.retry({ delaySeconds: stripeRetryDelaySeconds(message.attempts) });
		}
	}
}
