import { ClickCounter } from "./clicks/click-counter";
import { app } from "./http/app";
import { stripeQueue } from "./integrations/stripe/consumer";
import { UserLedger } from "./ledger/user-ledger";
import { queue } from "./outbox/consumer";
import { projectionQueue } from "./outbox/projection-consumer";
import { scheduled } from "./scheduled";

export { ClickCounter, UserLedger };

export default {
	fetch: app.fetch,
	// Three queues: emails and webhooks (outbox/consumer.ts), Stripe work (integrations/stripe/consumer.ts), and the
	// ledgers' projection records (outbox/projection-consumer.ts).
	queue: (batch, env, ctx) =>
		batch.queue.startsWith("referral-stripe")
			? stripeQueue(batch, env, ctx)
			: batch.queue.startsWith("referral-projection")
				? projectionQueue(batch, env, ctx)
				: queue(batch, env, ctx),
	scheduled,
} satisfies ExportedHandler<Env>;
