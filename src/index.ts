import { app } from "./http/app";
import { UserLedger } from "./ledger/user-ledger";
import { queue } from "./outbox/consumer";

export { UserLedger };

export default {
	fetch: app.fetch,
	queue,
} satisfies ExportedHandler<Env>;
