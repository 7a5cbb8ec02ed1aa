import { ledgerName } from "../domain/ledger-ids";
import type { UserLedger } from "./user-ledger";

/** The typed stub of the ledger of (app, user). */
export function ledgerFor(env: Env, appid: string, userkey: string): DurableObjectStub<UserLedger> {
	return env.USER_LEDGER.getByName(ledgerName(appid, userkey));
}
