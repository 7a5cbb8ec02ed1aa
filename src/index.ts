import { app } from "./http/app";
import { UserLedger } from "./ledger/user-ledger";
import { queue } from "./outbox/consumer";
import { scheduled } from "./scheduled";

export { UserLedger };

export default {
	fetch: app.fetch,
	queue,
	scheduled,
} satisfies ExportedHandler<Env>;
