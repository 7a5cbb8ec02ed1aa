import type { AssignedCoupon } from "../db/projection";
import type { ProjectionMessage } from "../db/projection-batch";
import { holdsCode } from "./coupons";
import { InFlight } from "./in-flight";
import { LEASE_END_SQL } from "./locks";
import { rewardRow, updateReward } from "./mutations";
import { carryRecords, type FlushHost, flushOutbox, OUTBOX_DUE_SQL, OUTBOX_PENDING_SQL } from "./outbox";
import { deleteAcked, type SentEntry } from "./outbox-entries";
import type { LedgerOutboxEntry } from "./schema";
import { approveEndedHolds, HOLD_END_SQL } from "./status-changes";
import type { CouponClaim } from "./transaction-types";
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
/**
 * An alarm already set for at most this long before the next due work is
 * left as it is, not set again: the write's backstop (FLUSH_GRACE_MS) and
 * the end of the hold its flush starts (IN_FLIGHT_MS, some 25 ms later) are
 * one alarm, not two storage writes per flush (issue 33: a setAlarm is about
 * 0.17 ms of workerd CPU, bench/README.md). Going off that little early, the
 * alarm finds the work not yet due and arms itself for it (flush's end).
 */
const ALARM_SLACK_MS = 5_000;
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
	/** An explicit flush asked for D1 to be written now: the next round delivers records straight to D1, not through the queue. */
	private direct = false;
	/** After a failed lease resolution, ended leases are not due again before this (epoch ms). */
	private resolveRetryAt = 0;
	private flushSoon: Promise<void> | null = null;
	/** When the alarm this object last set will go off (epoch ms); null when unknown, none, or gone off. */
	private alarmAt: number | null = null;
	/** Entries sent to the projection queue, held until acknowledged or their hold ends (in memory: in-flight.ts). */
	private readonly inFlight = new InFlight();
	/** Other ledgers' records to ride in this ledger's next message (issue 49: a conversion's referrer's). */
	private carried: ProjectionMessage[] = [];

	constructor(
		private readonly ctx: DurableObjectState,
		private readonly env: Env,
		private readonly writer: LedgerWriter,
		/** Where the alarm is kept: the object's storage (the bench counts its alarm calls through a wrapper of it). */
		private readonly storage: DurableObjectStorage = ctx.storage,
	) {}

	/** If the process died between a commit and setting the alarm, pending work would wait for the next call; re-arm it now. */
	rearmAfterRestart(): void {
		void this.ctx.blockConcurrencyWhile(async () => {
			this.alarmAt = await this.storage.getAlarm();
			if (this.alarmAt === null) {
				const next = this.nextDue().at;
				if (next !== null) {
					this.alarmAt = Math.max(next, Date.now());
					await this.storage.setAlarm(this.alarmAt);
				}
			}
		});
	}

	/**
	 * After a write: arms the alarm and, unless told otherwise, starts the
	 * coalesced flush. With a flush, the alarm is only the backstop of a
	 * process that dies before it: the flush re-arms it for the earliest due
	 * work when it ends, so here an alarm already set within the grace period
	 * is left, and otherwise one is set for the grace period's end without
	 * reading what is due (a backstop may come later than work due sooner, by
	 * at most FLUSH_GRACE_MS, and only after a crash).
	 */
	afterWrite(flushNow: boolean): void {
		if (!flushNow) {
			this.armAlarm(0);
			return;
		}
		const backstop = Date.now() + FLUSH_GRACE_MS;
		if (this.alarmAt === null || this.alarmAt > backstop) this.setAlarm(backstop);
		this.kickFlush();
	}

	/** Approves the holds that have ended, then delivers the outbox; re-arms itself for what is left. */
	async alarm(): Promise<void> {
		// The alarm that woke this call has gone off: a write now must set a new backstop.
		this.alarmAt = null;
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
	flush(direct = false): Promise<FlushReport> {
		// A ledger without tables (never written, or a test ledger erased whole) has nothing to deliver.
		if (!this.writer.hasSchema()) return Promise.resolve({ done: 0, pending: 0 });
		if (direct) this.direct = true;
		if (this.flushing) {
			this.flushAgain = true;
			return this.flushing;
		}
		const run = async (): Promise<FlushReport> => {
			let done = 0;
			let failed = true;
			let pending = 0;
			try {
				do {
					this.flushAgain = false;
					const queued = !this.direct;
					this.direct = false;
					done += await flushOutbox(this.flushHost(queued));
				} while (this.flushAgain);
				failed = false;
			} finally {
				this.flushing = null;
				// After an unexpected failure, wait a little so a persistent bug cannot spin the alarm.
				pending = this.armAlarm(failed ? 60_000 : 0);
			}
			return { done, pending };
		};
		// Started on a later microtask, so `finally` can never run before `this.flushing` holds this run
		// (a run that finished synchronously once left a settled promise there, and every later flush did nothing).
		this.flushing = Promise.resolve().then(run);
		return this.flushing;
	}

	/**
	 * The projection queue's consumer wrote these entries to D1
	 * (records-queued.ts): they go, each at most at the version written, and
	 * the alarm, set for their hold, is set again for what is left.
	 */
	projectionWritten(acks: SentEntry[]): void {
		if (!this.writer.hasSchema()) return;
		this.writer.transactionSync(() => deleteAcked(this.writer.sql, acks));
		this.inFlight.release(acks);
		if (!this.flushing) this.armAlarm(0);
	}

	/**
	 * This ledger's records due now, for another ledger's message (outbox.ts,
	 * carryRecords): called right after a write, before its flush. Null with
	 * PROJECTION_DIRECT (records written straight to D1), with nothing to
	 * carry, or while a flush of this ledger is under way: that flush may be
	 * sending these very entries (they are held only once its send returned),
	 * and it goes round once more for the write, so they leave once, from here. `handedBack`: the write was a grant
	 * that handed its records back and armed nothing; armed here (afterHandBack).
	 */
	recordsToCarry(handedBack = false): ProjectionMessage | null {
		const carried = this.flushing ? null : this.carryNow();
		// The grant armed nothing (writer.ts, `null`): armed now that the due entries are held.
		if (handedBack) this.afterHandBack();
		return carried;
	}

	private carryNow(): ProjectionMessage | null {
		const host = this.flushHost(true);
		return host.queued ? carryRecords(host) : null;
	}

	/**
	 * After a grant that handed its records back (grant.ts, carried-records.ts) and gave what else was due to its
	 * caller (recordsToCarry): a flush only when something is still due now (a reward email, a coupon claim),
	 * otherwise the alarm for later work (a hold's end), and nothing when there is none and no alarm is set: the
	 * referrer of a steady conversion writes no alarm and runs no flush (issue 49).
	 */
	afterHandBack(): void {
		const { at } = this.nextDue();
		if (at !== null && at <= Date.now()) this.afterWrite(true);
		else if (at !== null || this.alarmAt !== null) this.armAlarm(0);
	}

	/** Another ledger's records (recordsToCarry), sent with this ledger's next message; its flush follows this write. */
	carry(part: ProjectionMessage): void {
		this.carried.push(part);
	}

	private flushHost(queued: boolean): FlushHost {
		return {
			// PROJECTION_DIRECT=1 (not in wrangler.toml): every flush writes D1 itself, as before issue 33 (the bench's comparison).
			queued: queued && (this.env as Env & { PROJECTION_DIRECT?: string }).PROJECTION_DIRECT !== "1",
			allRecords: !queued,
			inFlight: this.inFlight,
			takeCarried: () => this.carried.splice(0),
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
			sql.exec("DELETE FROM outbox WHERE id = ? AND ref = ?", entry.id, entry.ref);
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

	/**
	 * The earliest moment there is work for the alarm (an outbox entry due, the
	 * end of an in-flight hold with no acknowledgement yet, a reward's hold
	 * ending or a lease ending; epoch ms) and the entries waiting in the
	 * outbox: one statement, each subquery on its own index.
	 */
	private nextDue(): { at: number | null; pending: number } {
		const now = Date.now();
		const due = this.writer.sql
			.exec<{ pending: number; outbox: number | null; hold: string | null; lease: number | null }>(
				`SELECT (${OUTBOX_PENDING_SQL}) AS pending, (${OUTBOX_DUE_SQL}) AS outbox, (${HOLD_END_SQL}) AS hold, (${LEASE_END_SQL}) AS lease`,
				this.inFlight.heldJson(now),
			)
			.one();
		const lease = due.lease === null ? null : Math.max(due.lease, this.resolveRetryAt);
		// An entry sent and never acknowledged is sent again when its hold ends: the alarm (stored, unlike the hold) comes back then.
		const inFlight = due.pending > 0 ? this.inFlight.earliestEnd(now) : null;
		const times = [due.outbox, inFlight, due.hold === null ? null : Date.parse(due.hold), lease].filter((t): t is number => t !== null);
		return { at: times.length ? Math.min(...times) : null, pending: due.pending };
	}

	/**
	 * Sets the alarm for the next due work, synchronously after a write that
	 * starts no flush and at the end of every flush, so the last call always
	 * leaves the earliest time in place (or one at most ALARM_SLACK_MS before
	 * it). Returns the entries waiting in the outbox.
	 */
	private armAlarm(minDelayMs: number): number {
		if (!this.writer.hasSchema()) return 0;
		const { at, pending } = this.nextDue();
		if (at === null) {
			this.alarmAt = null;
			this.storage.deleteAlarm().catch((error) => console.error("ledger alarm not deleted", error));
			return pending;
		}
		const wanted = Math.max(at, Date.now() + minDelayMs);
		const set = this.alarmAt;
		// Still to go off (alarm() forgets it when it does), and no more than the slack early: left as it is.
		if (set !== null && set > Date.now() && set <= wanted && wanted - set <= ALARM_SLACK_MS) return pending;
		this.setAlarm(wanted);
		return pending;
	}

	private setAlarm(at: number): void {
		this.alarmAt = at;
		this.storage.setAlarm(at).catch((error) => console.error("ledger alarm not set", error));
	}
}
