import { ClickCounter } from "./clicks/click-counter";
import { app } from "./http/app";
import { countPart } from "./instrument/platform-parts";
import { stripeQueue } from "./integrations/stripe/consumer";
import { StripeGovernor } from "./integrations/stripe/governor";
import { EventGate } from "./ledger/event-gate";
import { UserLedger } from "./ledger/user-ledger";
import { queue } from "./outbox/consumer";
import { projectionQueue } from "./outbox/projection-consumer";
import { scheduled } from "./scheduled";

export { ClickCounter, EventGate, StripeGovernor, UserLedger };

export default {
	fetch: app.fetch,
	// Three queues: emails and webhooks (outbox/consumer.ts), Stripe work (integrations/stripe/consumer.ts), and the
	// ledgers' projection records (outbox/projection-consumer.ts).
	queue: (batch, env, ctx) => {
		if (batch.queue.startsWith("referral-stripe")) return stripeQueue(batch, env, ctx);
		if (!batch.queue.startsWith("referral-projection")) return queue(batch, env, ctx);
		// The bench's count of the consumer's invocations (instrument/platform-parts.ts).
		countPart("projectionBatches");
		countPart("projectionBatchMessages", batch.messages.length);
		return projectionQueue(batch, env, ctx);
	},
	scheduled,
} satisfies ExportedHandler<Env>;
