import { ledgerName } from "../domain/ledger-ids";

/** The typed stub of a ledger: typed by the binding (worker-configuration.d.ts), so this module imports no ledger code. */
export type LedgerStub = ReturnType<Env["USER_LEDGER"]["getByName"]>;

/** The typed stub of the ledger of (app, user). */
export function ledgerFor(env: Env, appid: string, userkey: string): LedgerStub {
	return env.USER_LEDGER.getByName(ledgerName(appid, userkey));
}
