import { countPart } from "../instrument/platform-parts";
import { migrateLedger } from "./migrate";
import { Refused } from "./refused";
import type { LedgerStatement } from "./schema-step-12";
import type { TxContext } from "./transaction-types";
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
	/** False until the ledger has tables: a ledger is created by its first write, never by a read. */
	private schema: boolean;
	/**
	 * True from this object's creating its tables until the end of the transaction that follows (in the same
	 * synchronous call): that transaction starts on an empty ledger (TxContext.empty).
	 */
	private createdNow = false;

	constructor(
		private readonly storage: DurableObjectStorage,
		readonly identity: LedgerIdentity,
		private readonly afterWrite: (flushNow: boolean) => void,
		private readonly migrations: readonly (readonly LedgerStatement[])[],
	) {
		this.sql = storage.sql;
		const tables = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'rewards') LIMIT 1").toArray();
		this.schema = tables.length > 0;
		// An existing ledger is brought to the newest version before anything reads it.
		if (this.schema) migrateLedger(storage, migrations);
	}

	/**
	 * True once the ledger has its tables. A ledger without them has no
	 * rewards, balances or outbox: reads answer empty without creating it, so
	 * a made-up userkey or reward id leaves no stored object behind.
	 */
	hasSchema(): boolean {
		return this.schema;
	}

	/** The storage was emptied (a test ledger erased whole): the next write creates the tables again. */
	forgetSchema(): void {
		this.schema = false;
	}

	/** Creates the ledger's tables (newest schema, one script) before its first write. */
	ensureSchema(): void {
		if (this.schema) return;
		countPart("ledgersCreated");
		migrateLedger(this.storage, this.migrations);
		this.schema = true;
		this.createdNow = true;
	}

	/** One storage transaction; the first after the tables were created is the only one that starts empty. */
	private transaction<T>(fn: () => T): T {
		try {
			return this.storage.transactionSync(fn);
		} finally {
			this.createdNow = false;
		}
	}

	/** Runs `fn` in one storage transaction, nothing else (for writes that arm no alarm). */
	transactionSync<T>(fn: () => T): T {
		this.ensureSchema();
		return this.transaction(fn);
	}

	/** Who the ledger belongs to and when the current transaction happens (and whether it started empty). */
	context(): TxContext {
		const context: TxContext = { sql: this.sql, appid: this.identity.appid, userkey: this.identity.userkey, nowMs: Date.now() };
		if (this.createdNow) context.empty = true;
		return context;
	}

	/**
	 * Runs `fn` in one storage transaction, then arms the alarm and (optionally) starts a flush; `null`: neither, the
	 * caller does (a grant that hands its records back: FlushSchedule.afterHandBack).
	 */
	write<T>(fn: (tx: TxContext) => T, flushNow: boolean | null = true): T {
		this.ensureSchema();
		const result = this.transaction(() => fn(this.context()));
		if (flushNow !== null) this.afterWrite(flushNow);
		return result;
	}

	/**
	 * Like write, for methods that answer a LedgerResult: a Refused thrown by
	 * `fn` rolls the whole transaction back and becomes the error. A dry run
	 * always rolls back and answers what the write would have answered.
	 */
	attempt<T extends object>(fn: (tx: TxContext) => T, dryRun = false): LedgerResult<T> {
		this.ensureSchema();
		try {
			if (dryRun) {
				this.transaction(() => {
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
