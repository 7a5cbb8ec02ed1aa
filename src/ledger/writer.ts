import type { TxContext } from "./mutations";
import { Refused } from "./refused";
import type { LedgerResult } from "./types";

/** Thrown at the end of a dry run to roll its transaction back while keeping its answer. */
class DryRun {
	constructor(readonly value: unknown) {}
}

/** Who a ledger belongs to, from the name it was created by (`ledgerFor`). */
export interface LedgerIdentity {
	appid: string;
	userkey: string;
}

/**
 * The ledger's write discipline. Every change runs inside one synchronous
 * storage transaction (`write`, `attempt`), so a check and the write that
 * depends on it cannot be interleaved with another call, and a reward, its
 * running balance and the outbox entries that report it change together or
 * not at all. After each write, `afterWrite` arms the alarm and starts the
 * coalesced flush (flush-schedule.ts).
 */
export class LedgerWriter {
	readonly sql: SqlStorage;

	constructor(
		private readonly storage: DurableObjectStorage,
		readonly identity: LedgerIdentity,
		private readonly afterWrite: (flushNow: boolean) => void,
	) {
		this.sql = storage.sql;
	}

	/** Runs `fn` in one storage transaction, nothing else (for writes that arm no alarm). */
	transactionSync<T>(fn: () => T): T {
		return this.storage.transactionSync(fn);
	}

	/** Who the ledger belongs to and when the current transaction happens. */
	context(): TxContext {
		return { sql: this.sql, appid: this.identity.appid, userkey: this.identity.userkey, nowMs: Date.now() };
	}

	/** Runs `fn` in one storage transaction, then arms the alarm and (optionally) starts a flush. */
	write<T>(fn: (tx: TxContext) => T, flushNow = true): T {
		const result = this.storage.transactionSync(() => fn(this.context()));
		this.afterWrite(flushNow);
		return result;
	}

	/**
	 * Like write, for methods that answer a LedgerResult: a Refused thrown by
	 * `fn` rolls the whole transaction back and becomes the error. A dry run
	 * always rolls back and answers what the write would have answered.
	 */
	attempt<T extends object>(fn: (tx: TxContext) => T, dryRun = false): LedgerResult<T> {
		try {
			if (dryRun) {
				this.storage.transactionSync(() => {
					throw new DryRun(fn(this.context()));
				});
			}
			return { ok: true, ...this.write(fn) };
		} catch (error) {
			if (error instanceof DryRun) return { ok: true, ...(error.value as T) };
			if (error instanceof Refused) return { ok: false, error: error.error };
			throw error;
		}
	}
}
