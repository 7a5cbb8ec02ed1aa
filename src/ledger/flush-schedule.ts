import type { AssignedCoupon } from "../db/projection";
import { type CouponClaim, holdsCode } from "./coupons";
import { nextLeaseEnd } from "./locks";
import { rewardRow, updateReward } from "./mutations";
import { type FlushHost, flushOutbox, nextOutboxDue } from "./outbox";
import type { LedgerOutboxEntry } from "./schema";
import { approveEndedHolds, nextHoldEnd } from "./status-changes";
import { resolveExpiredTransactions } from "./transactions";
import type { FlushReport } from "./types";
import type { LedgerWriter } from "./writer";

/** After a write, the alarm is the backstop of the flush that starts soon after, so it need not fire before this. */
const FLUSH_GRACE_MS = 30_000;
/**
 * A write's flush starts this long after it, so the writes of a busy ledger
 * (a burst of grants, redemptions) share one flush: one D1 round trip for
 * all of them. Writes during a running flush make it go round once more.
 */
const FLUSH_COALESCE_MS = 25;
/** How long after a failed lease resolution (D1 unreachable) the alarm tries again. */
const RESOLVE_RETRY_MS = 5_000;

/**
 * When a ledger's work leaves the object: the flush of its outbox started
 * shortly after each write (coalesced), and the alarm, armed after every
 * write for the earliest due work (an outbox entry, a hold ending, a lease
 * ending), which resolves ended leases, approves ended holds and flushes
 * whatever the last flush missed.
 */
export class FlushSchedule {
	private flushing: Promise<FlushReport> | null = null;
	private flushAgain = false;
	/** After a failed lease resolution, ended leases are not due again before this (epoch ms). */
	private resolveRetryAt = 0;
	private flushSoon: Promise<void> | null = null;

	constructor(
		private readonly ctx: DurableObjectState,
		private readonly env: Env,
		private readonly writer: LedgerWriter,
	) {}

	/** If the process died between a commit and setting the alarm, pending work would wait for the next call; re-arm it now. */
	rearmAfterRestart(): void {
		void this.ctx.blockConcurrencyWhile(async () => {
			if ((await this.ctx.storage.getAlarm()) === null) {
				const next = this.nextDue();
				if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
			}
		});
	}

	/** After a write: arms the alarm and, unless told otherwise, starts the coalesced flush. */
	afterWrite(flushNow: boolean): void {
		this.armAlarm(flushNow ? FLUSH_GRACE_MS : 0);
		if (flushNow) this.kickFlush();
	}

	/** Approves the holds that have ended, then delivers the outbox; re-arms itself for what is left. */
	async alarm(): Promise<void> {
		try {
			await resolveExpiredTransactions(this.writer, this.env.DB);
			this.resolveRetryAt = 0;
		} catch (error) {
			// D1 unreachable: the locks stay (safe) and the alarm comes back soon (see nextDue).
			console.error("ledger lease resolution failed", error);
			this.resolveRetryAt = Date.now() + RESOLVE_RETRY_MS;
		}
		this.writer.write((tx) => approveEndedHolds(tx), false);
		await this.flush();
	}

	/**
	 * Delivers what is due in the outbox now. Only one flush runs at a time
	 * per object: a call during a flush waits for it and makes it go round once
	 * more, so nothing is delivered twice in parallel.
	 */
	flush(): Promise<FlushReport> {
		if (this.flushing) {
			this.flushAgain = true;
			return this.flushing;
		}
		const run = async (): Promise<FlushReport> => {
			let report: FlushReport = { done: 0, pending: 0 };
			let failed = true;
			try {
				do {
					this.flushAgain = false;
					const pass = await flushOutbox(this.flushHost());
					report = { done: report.done + pass.done, pending: pass.pending };
				} while (this.flushAgain);
				failed = false;
				return report;
			} finally {
				this.flushing = null;
				// After an unexpected failure, wait a little so a persistent bug cannot spin the alarm.
				this.armAlarm(failed ? 60_000 : 0);
			}
		};
		// Started on a later microtask, so `finally` can never run before `this.flushing` holds this run
		// (a run that finished synchronously once left a settled promise there, and every later flush did nothing).
		this.flushing = Promise.resolve().then(run);
		return this.flushing;
	}

	private flushHost(): FlushHost {
		return {
			sql: this.writer.sql,
			transactionSync: (fn) => this.writer.transactionSync(fn),
			env: this.env,
			...this.writer.identity,
			assignCoupon: (entry, claim, coupon) => this.assignCoupon(entry, claim, coupon),
		};
	}

	private assignCoupon(entry: LedgerOutboxEntry, claim: CouponClaim, coupon: AssignedCoupon): void {
		const sql = this.writer.sql;
		this.writer.transactionSync(() => {
			const row = rewardRow(sql, claim.seq);
			// A replayed claim returns the same code, so a reward that already has one is left as it is. A reward
			// rejected while the claim was under way takes no code: its rejection queued the release (coupons.ts).
			if (row && row.coupon === null && holdsCode(row.status)) updateReward(this.writer.context(), row, coupon);
			sql.exec("DELETE FROM outbox WHERE id = ?", entry.id);
		});
	}

	private kickFlush(): void {
		// Not awaited: the caller's answer must not wait on D1 and the queue. The alarm retries whatever this misses.
		if (this.flushSoon) return;
		this.flushSoon = new Promise<void>((resolve) => setTimeout(resolve, FLUSH_COALESCE_MS)).then(() => {
			this.flushSoon = null;
			return this.flush().then(
				() => {},
				(error) => console.error("ledger flush failed", error),
			);
		});
		this.ctx.waitUntil(this.flushSoon);
	}

	/** The earliest moment there is work for the alarm: an outbox entry due, a hold ending or a lease ending (epoch ms). */
	private nextDue(): number | null {
		const outbox = nextOutboxDue(this.writer.sql);
		const hold = nextHoldEnd(this.writer.sql);
		const times = [outbox, hold === null ? null : Date.parse(hold), this.leaseDue()].filter((t): t is number => t !== null);
		return times.length ? Math.min(...times) : null;
	}

	private leaseDue(): number | null {
		const end = nextLeaseEnd(this.writer.sql);
		return end === null ? null : Math.max(end, this.resolveRetryAt);
	}

	/**
	 * Sets the alarm for the next due work, synchronously after the write that
	 * created it, so the last call always leaves the earliest time in place.
	 */
	private armAlarm(minDelayMs: number): void {
		const next = this.nextDue();
		const storage = this.ctx.storage;
		const done = next === null ? storage.deleteAlarm() : storage.setAlarm(Math.max(next, Date.now() + minDelayMs));
		done.catch((error) => console.error("ledger alarm not set", error));
	}
}
