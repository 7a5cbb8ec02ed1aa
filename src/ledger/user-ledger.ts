import { DurableObject } from "cloudflare:workers";
import { decideOnce } from "../db/decisions";
import { ledgerName, parseLedgerName, seqOfRewardId } from "../domain/ledger-ids";
import { instrumentEnv } from "../instrument/d1-metrics";
import { webhookEvent } from "../outbox/events";
import { fromHundredths, toHundredths } from "../rewards/money";
import { type BalanceRow, nestBalances } from "./balance";
import { listClawbacks, restOf } from "./clawbacks";
import {
	assertUnlocked,
	expiredTransactions,
	finishTransaction,
	forgetFinishedTransactions,
	insertTransaction,
	lockRewards,
	nextLeaseEnd,
	transactionRow,
} from "./locks";
import { migrateLedger } from "./migrate";
import { insertReward, rewardRow, rewardRowByKey, settleAllOwed, type TxContext, updateReward } from "./mutations";
import { type AssignedCoupon, type CouponClaim, type FlushHost, flushOutbox, nextOutboxDue, queueWebhook } from "./outbox";
import { erasePersonInLedger } from "./privacy";
import { allocateOldestFirst, available } from "./redeem";
import { withIdempotencyKey } from "./redemption-keys";
import { Refused } from "./refused";
import { applyRecordedRefunds } from "./reversal";
import { rewardSummary, toLedgerReward, toView } from "./rows";
import { type ClawbackRow, LEDGER_MIGRATIONS, type OutboxRow, type RewardRow, type TransactionRow } from "./schema";
import { applyOperation, type LedgerOperation, type LedgerOperationResult, lockedSeqs } from "./transaction-kinds";
import type {
	BalanceFilter,
	BalanceRecord,
	ConversionAnnouncement,
	FlushReport,
	GrantResult,
	LedgerIdempotency,
	LedgerResult,
	LedgerReward,
	RedeemByAmount,
	RewardGrant,
	RewardView,
	StatusChange,
} from "./types";

/** After a write, the alarm is the backstop of the flush that starts soon after, so it need not fire before this. */
const FLUSH_GRACE_MS = 30_000;
/**
 * A write's flush starts this long after it, so the writes of a busy ledger
 * (a burst of grants, redemptions) share one flush: one D1 round trip for
 * all of them. Writes during a running flush make it go round once more.
 */
const FLUSH_COALESCE_MS = 25;

/**
 * SQL conditions (and their arguments) for the optional filters shared by
 * balances and redemption; the growth hack is matched without regard to case.
 */
function filterClause(filter: { campaignid?: number; growthhack?: string; rewardunit?: string }) {
	const where: string[] = [];
	const args: (string | number)[] = [];
	if (filter.campaignid !== undefined) {
		where.push("campaignid = ?");
		args.push(filter.campaignid);
	}
	if (filter.growthhack !== undefined) {
		where.push("growthhack = ? COLLATE NOCASE");
		args.push(filter.growthhack);
	}
	if (filter.rewardunit !== undefined) {
		where.push("rewardunit = ?");
		args.push(filter.rewardunit);
	}
	return { where, args };
}

type Redemption = { redeemed: number; rewards: LedgerReward[] };

/** Longest lease a prepare may ask for: a lock must never outlive a stuck coordinator by much. */
export const MAX_LEASE_MS = 60_000;
/** How long after a failed lease resolution (D1 unreachable) the alarm tries again. */
const RESOLVE_RETRY_MS = 5_000;

/** Thrown at the end of a dry run to roll its transaction back while keeping its answer. */
class DryRun {
	constructor(readonly value: unknown) {}
}

/**
 * One per (app, user): the single writer of that user's rewards, redemptions
 * and balance. Every method checks and writes inside one synchronous storage
 * transaction, so concurrent calls can never interleave between a check and
 * the write that depends on it. What must leave the object goes through the
 * outbox (see outbox.ts), flushed right after each write and by the alarm.
 */
export class UserLedger extends DurableObject<Env> {
	private readonly sql: SqlStorage;
	/** Who this ledger belongs to, from the name it was created by (`ledgerFor`), so it is known before any write. */
	private readonly identity: { appid: string; userkey: string };
	private flushing: Promise<FlushReport> | null = null;
	private flushAgain = false;
	/** After a failed lease resolution, ended leases are not due again before this (epoch ms). */
	private resolveRetryAt = 0;
	private flushSoon: Promise<void> | null = null;

	constructor(ctx: DurableObjectState, env: Env) {
		// With the bench's D1_QUERY_COUNT flag, this ledger's D1 use (its outbox flushes) is counted too.
		super(ctx, instrumentEnv(env, "ledger"));
		this.sql = ctx.storage.sql;
		const identity = ctx.id.name === undefined ? null : parseLedgerName(ctx.id.name);
		if (!identity) throw new Error(`UserLedger must be created by name (appid:userkey), got ${ctx.id.name ?? "an unnamed id"}`);
		this.identity = identity;
		migrateLedger(ctx.storage, LEDGER_MIGRATIONS);
		// If the process died between a commit and setting the alarm, pending work would wait for the next call; re-arm it now.
		void ctx.blockConcurrencyWhile(async () => {
			if ((await ctx.storage.getAlarm()) === null) {
				const next = this.nextDue();
				if (next !== null) await ctx.storage.setAlarm(Math.max(next, Date.now()));
			}
		});
	}

	// ---- rewards -------------------------------------------------------------------------------

	/**
	 * Creates the rewards of `grants` for this user. Idempotent by grant key
	 * (a known key returns its reward with created: false); a grant whose rule
	 * already rewarded this user `rewardfrequency` times for the same friend is
	 * skipped. Amounts are rounded half-up to hundredths.
	 */
	grant(appid: string, userkey: string, grants: RewardGrant[], announcement?: ConversionAnnouncement): GrantResult {
		this.checkIdentity(appid, userkey);
		return this.write((tx) => {
			const ctx = tx;
			const result: GrantResult = { rewards: [], skipped: [] };
			for (const grant of grants) {
				const existing = rewardRowByKey(ctx.sql, grant.key);
				if (existing) {
					result.rewards.push({ ...toLedgerReward(userkey, existing), created: false });
					continue;
				}
				if (grant.rewardfrequency > 0) {
					// Every earlier reward counts, rejected ones too: a rejected reward must not be re-earned by repeating the event.
					const { n } = ctx.sql
						.exec<{ n: number }>(
							"SELECT COUNT(*) AS n FROM rewards WHERE ruleid = ? AND friend_userkey = ?",
							grant.ruleid,
							grant.friend.userkey,
						)
						.one();
					if (n >= grant.rewardfrequency) {
						result.skipped.push({ key: grant.key, reason: "frequency_limit" });
						continue;
					}
				}
				const amount = toHundredths(grant.amount);
				// The rules engine only produces valid amounts, so anything else is a bug, not an expected failure.
				if (amount === null || amount < 0) throw new RangeError(`invalid reward amount ${grant.amount} for grant ${grant.key}`);
				const row = applyRecordedRefunds(ctx, insertReward(ctx, grant, amount));
				result.rewards.push({ ...toLedgerReward(userkey, rewardRow(ctx.sql, row.seq) ?? row), created: true });
			}
			if (announcement) {
				const rewards = [...result.rewards.map((r) => rewardSummary(userkey, r)), ...announcement.otherRewards];
				const event = webhookEvent(appid, "conversion.recorded", { ...announcement.payload, rewards }, announcement.eventid);
				queueWebhook(ctx.sql, event, ctx.nowMs);
			}
			return result;
		});
	}

	/** One reward of this ledger by its public id, or null. */
	getReward(rewarddtlid: string): LedgerReward | null {
		const row = this.rowById(rewarddtlid);
		return row ? toLedgerReward(this.identity.userkey, row) : null;
	}

	/** Rewards of this ledger, oldest first, a page at a time: at most `limit` (<= 1000) after reward number `afterSeq` (tests and admin). */
	listRewards(limit = 1000, afterSeq = 0): LedgerReward[] {
		const userkey = this.identity.userkey;
		return this.sql
			.exec<RewardRow>("SELECT * FROM rewards WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, Math.min(Math.max(limit, 1), 1000))
			.toArray()
			.map((row) => toLedgerReward(userkey, row));
	}

	/** Every clawback of this ledger, oldest first (tests and admin; amounts in hundredths). */
	listClawbacks(): ClawbackRow[] {
		return listClawbacks(this.sql);
	}

	/**
	 * The rewards each of the given friends produced for this user: the newest
	 * `limit` of each, newest first, and how many there are in all. Every
	 * friend asked for gets an entry (maybe empty). Bounded, so one friend with
	 * thousands of rewards cannot make a page heavy.
	 */
	rewardsForFriends(friendUserkeys: string[], limit = 100): Record<string, { rewards: RewardView[]; total: number }> {
		const out: Record<string, { rewards: RewardView[]; total: number }> = {};
		const unique = [...new Set(friendUserkeys)];
		for (const key of unique) out[key] = { rewards: [], total: 0 };
		const userkey = this.identity.userkey;
		for (const key of unique) {
			// Both through the rewards_friend (friend_userkey, seq) index.
			const rows = this.sql
				.exec<RewardRow>("SELECT * FROM rewards WHERE friend_userkey = ? ORDER BY seq DESC LIMIT ?", key, limit)
				.toArray();
			const total =
				rows.length < limit
					? rows.length
					: this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM rewards WHERE friend_userkey = ?", key).one().n;
			out[key] = { rewards: rows.map((row) => toView(userkey, row)), total };
		}
		return out;
	}

	/** getuserbalance, read from the running totals only (cost grows with campaigns, not rewards). */
	balance(filter: BalanceFilter = {}): BalanceRecord[] {
		const { where, args } = filterClause(filter);
		const rows = this.sql
			.exec<BalanceRow & Record<string, SqlStorageValue>>(
				`SELECT * FROM balances ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY rewardunit, growthhack, campaignid`,
				...args,
			)
			.toArray();
		return nestBalances(rows);
	}

	// ---- privacy -------------------------------------------------------------------------------

	/** Erases what this ledger copied from a person (friend snapshots, pending webhooks); money untouched (see privacy.ts). */
	erasePerson(personUserkey: string, values: string[]): { rewards: number; webhooks: number } {
		return this.ctx.storage.transactionSync(() => erasePersonInLedger(this.sql, personUserkey, values));
	}

	// ---- status changes and multi-ledger transactions ------------------------------------------------------------------------

	/** Checks `changes` as changeStatuses would and answers what they would give, changing nothing. */
	validateStatusChanges(changes: StatusChange[]): LedgerResult<LedgerOperationResult> {
		return this.attempt((tx) => applyOperation(tx, { kind: "status", changes }), true);
	}

	/** changerewardstatus within this ledger alone: every change or none (decisions.md §4). */
	changeStatuses(changes: StatusChange[]): LedgerResult<LedgerOperationResult> {
		return this.execute({ kind: "status", changes });
	}

	/** Applies a ledger operation (transaction-kinds.ts) at once, in one transaction: for a change that concerns this ledger only. */
	execute(operation: LedgerOperation): LedgerResult<LedgerOperationResult> {
		return this.attempt((tx) => applyOperation(tx, operation));
	}

	/**
	 * Phase one of a multi-ledger transaction (coordination/ledger-transaction.ts):
	 * checks that `operation` would apply (a dry run), then locks the rewards
	 * it names for `leaseMs`, so nothing else changes them until `commit`,
	 * `abort` or the end of the lease. A reward locked by another transaction
	 * is refused with `reward_locked`. Idempotent per `txid`: a repeat answers
	 * the state reached; a txid already aborted is refused.
	 */
	prepare(txid: string, operation: LedgerOperation, leaseMs: number): LedgerResult<{ state: "prepared" | "committed" }> {
		const known = transactionRow(this.sql, txid);
		if (known) return this.knownState(known);
		const lease = Math.min(Math.max(leaseMs, 1_000), MAX_LEASE_MS);
		const dry = this.attempt((tx) => applyOperation(tx, operation), true);
		if (!dry.ok) return dry;
		this.ctx.storage.transactionSync(() => {
			const now = Date.now();
			forgetFinishedTransactions(this.sql, now);
			insertTransaction(this.sql, {
				txid,
				kind: operation.kind,
				payload: JSON.stringify(operation),
				state: "prepared",
				lease_until: now + lease,
				updated_at: now,
			});
			lockRewards(this.sql, txid, lockedSeqs(this.sql, this.identity.userkey, operation));
		});
		this.armAlarm(0);
		return { ok: true, state: "prepared" };
	}

	/**
	 * Phase two: applies the prepared operation and releases its locks, in one
	 * transaction. Only called once the decision `commit` is stored in D1, so
	 * it applies even after the lease ended, as long as the ledger has not
	 * aborted it yet. Idempotent: a repeat answers the first result.
	 */
	commit(txid: string): LedgerResult<{ result: LedgerOperationResult }> {
		return this.finish(txid, "committed");
	}

	/** Releases a prepared transaction without applying it. An unknown txid is recorded as aborted, so a late prepare is refused. */
	abort(txid: string): LedgerResult<{ state: "aborted" | "committed" }> {
		const known = transactionRow(this.sql, txid);
		if (known?.state === "committed") return { ok: true, state: "committed" };
		if (!known) {
			this.ctx.storage.transactionSync(() => {
				const now = Date.now();
				insertTransaction(this.sql, { txid, kind: "unknown", payload: "null", state: "aborted", lease_until: now, updated_at: now });
			});
			return { ok: true, state: "aborted" };
		}
		const done = this.finish(txid, "aborted");
		return done.ok ? { ok: true, state: "aborted" } : done;
	}

	private knownState(row: TransactionRow): LedgerResult<{ state: "prepared" | "committed" }> {
		if (row.state === "aborted")
			return { ok: false, error: { code: "transaction_aborted", message: `transaction ${row.txid} was aborted` } };
		return { ok: true, state: row.state };
	}

	private finish(txid: string, state: "committed" | "aborted"): LedgerResult<{ result: LedgerOperationResult }> {
		return this.attempt((tx) => {
			const row = transactionRow(this.sql, txid);
			if (!row) throw new Refused({ code: "transaction_aborted", message: `transaction ${txid} is unknown here` });
			if (row.state === "committed") return { result: JSON.parse(row.result ?? "null") as LedgerOperationResult };
			if (row.state === "aborted") {
				if (state === "aborted") return { result: { rewards: [] } };
				throw new Refused({ code: "transaction_aborted", message: `transaction ${txid} was aborted` });
			}
			const result = state === "committed" ? applyOperation(tx, JSON.parse(row.payload) as LedgerOperation, txid) : { rewards: [] };
			finishTransaction(this.sql, txid, state, result, tx.nowMs);
			// Rewards this transaction kept locked could not pay off clawbacks meanwhile; they do now (clawbacks.ts).
			settleAllOwed(tx);
			return { result };
		});
	}

	/**
	 * Ends the transactions whose lease ran out: the decision stored in D1
	 * (or `abort`, written now when there is none) says whether to apply or
	 * release. The locks stay until the decision is known.
	 */
	private async resolveExpiredTransactions(): Promise<void> {
		for (const row of expiredTransactions(this.sql, Date.now())) {
			const decision = await decideOnce(this.env.DB, this.identity.appid, row.txid, "abort");
			const done = this.finish(row.txid, decision === "commit" ? "committed" : "aborted");
			if (!done.ok) {
				// Cannot happen while the locks hold (nothing else changed the rewards); if it does, release rather
				// than keep the rewards locked and the alarm spinning, and say so loudly.
				console.error("ledger transaction could not be committed at lease end; released", { txid: row.txid, error: done.error });
				this.finish(row.txid, "aborted");
			}
		}
	}

	// ---- redemption ----------------------------------------------------------------------------

	/**
	 * Redeems `amount` from the user's approved wallet rewards, oldest first,
	 * the last one in part when needed; more than is available is refused whole.
	 */
	redeemByAmount(request: RedeemByAmount): LedgerResult<Redemption> {
		const amount = toHundredths(request.amount);
		if (amount === null || amount <= 0) return { ok: false, error: { code: "invalid_amount", message: "amount must be a number above 0" } };
		return this.attempt((tx) =>
			withIdempotencyKey(tx, request.idempotency, () => {
				// What is owed is paid off before anything is spent (normally already done when the debt or the credit arrived).
				settleAllOwed(tx);
				const filter = filterClause(request);
				const where = [
					"status = 'Approved'",
					"rewardtype = 'InstoreCredits'",
					"amount - reversed - redeemed - settled > 0",
					...filter.where,
				];
				const args = filter.args;
				if (request.rewardunit === undefined) {
					// Never add dollars to points: with several units under the filters, the caller must say which.
					const units = this.sql
						.exec<{ rewardunit: string }>(
							`SELECT DISTINCT rewardunit FROM rewards WHERE ${where.join(" AND ")} ORDER BY rewardunit`,
							...args,
						)
						.toArray()
						.map((r) => r.rewardunit);
					if (units.length > 1) {
						throw new Refused({ code: "rewardunit_required", rewardunits: units, message: "the approved rewards span several units" });
					}
				}
				// Read oldest first only until the amount is covered (through the rewards_wallet index), so a
				// redemption costs what it takes, not the user's whole history; a refusal still reads them all.
				const candidates: { seq: number; remaining: number }[] = [];
				let covered = 0;
				for (const row of this.sql.exec<{ seq: number; remaining: number }>(
					`SELECT seq, amount - reversed - redeemed - settled AS remaining FROM rewards WHERE ${where.join(" AND ")} ORDER BY seq`,
					...args,
				)) {
					candidates.push(row);
					covered += row.remaining;
					if (covered >= amount) break;
				}
				const allocations = allocateOldestFirst(candidates, amount);
				if (!allocations) {
					const approved = fromHundredths(available(candidates));
					throw new Refused({ code: "insufficient_balance", approved, message: `only ${approved} is available to redeem` });
				}
				for (const { seq } of allocations) assertUnlocked(this.sql, tx.userkey, seq);
				const rewards = allocations.map(({ seq, take }) => this.redeem(tx, rewardRow(this.sql, seq)!, take));
				return { redeemed: fromHundredths(amount), rewards };
			}),
		);
	}

	/** Redeems the whole remaining amount of each reward; all must be this user's approved wallet rewards, else none is redeemed. */
	redeemByIds(ids: string[], idempotency?: LedgerIdempotency): LedgerResult<Redemption> {
		return this.attempt((tx) =>
			withIdempotencyKey(tx, idempotency, () => {
				settleAllOwed(tx);
				let total = 0;
				const rewards: LedgerReward[] = [];
				for (const id of new Set(ids)) {
					const row = this.rowById(id);
					if (!row) throw new Refused({ code: "reward_not_found", rewarddtlid: id, message: "no such reward" });
					assertUnlocked(this.sql, tx.userkey, row.seq);
					if (row.rewardtype !== "InstoreCredits" || row.status !== "Approved" || restOf(row) <= 0) {
						throw new Refused({
							code: "reward_not_redeemable",
							rewarddtlid: id,
							message: row.rewardtype !== "InstoreCredits" ? `${row.rewardtype} rewards are not redeemed here` : `reward is ${row.status}`,
						});
					}
					total += restOf(row);
					rewards.push(this.redeem(tx, row, restOf(row)));
				}
				return { redeemed: fromHundredths(total), rewards };
			}),
		);
	}

	private redeem(tx: TxContext, before: RewardRow, take: number): LedgerReward {
		const redeemed = before.redeemed + take;
		const full = take === restOf(before);
		const after = updateReward(
			tx,
			before,
			full ? { redeemed, status: "Rewarded", rewarded_at: new Date(tx.nowMs).toISOString(), hold_until: null } : { redeemed },
			{ type: "reward.redeemed", extra: { redeemedamount: fromHundredths(take) } },
		);
		return toLedgerReward(tx.userkey, after);
	}

	// ---- alarm and outbox ----------------------------------------------------------------------

	/** Approves the holds that have ended, then delivers the outbox; re-arms itself for what is left. */
	override async alarm(): Promise<void> {
		try {
			await this.resolveExpiredTransactions();
			this.resolveRetryAt = 0;
		} catch (error) {
			// D1 unreachable: the locks stay (safe) and the alarm comes back soon (see nextDue).
			console.error("ledger lease resolution failed", error);
			this.resolveRetryAt = Date.now() + RESOLVE_RETRY_MS;
		}
		this.write((tx) => {
			// A locked reward waits for its transaction; the hold is approved on the alarm after the lock goes.
			const ended = this.sql
				.exec<RewardRow>(
					`SELECT * FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL AND hold_until <= ?
						   AND seq NOT IN (SELECT seq FROM reward_locks) ORDER BY seq`,
					new Date(tx.nowMs).toISOString(),
				)
				.toArray();
			for (const row of ended) {
				updateReward(
					tx,
					row,
					{ status: "Approved", hold_until: null },
					{ type: "reward.status_changed", extra: { previousstatus: row.status } },
				);
			}
		}, false);
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
					const pass = await flushOutbox(this.flushHost(this.identity));
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

	private flushHost(identity: { appid: string; userkey: string }): FlushHost {
		return {
			sql: this.sql,
			transactionSync: (fn) => this.ctx.storage.transactionSync(fn),
			env: this.env,
			...identity,
			assignCoupon: (entry, claim, coupon) => this.assignCoupon(entry, claim, coupon),
		};
	}

	private assignCoupon(entry: OutboxRow, claim: CouponClaim, coupon: AssignedCoupon): void {
		this.ctx.storage.transactionSync(() => {
			const row = rewardRow(this.sql, claim.seq);
			// A replayed claim returns the same code, so a reward that already has one is left as it is.
			if (row && row.coupon === null) updateReward(this.txContext(), row, coupon);
			this.sql.exec("DELETE FROM outbox WHERE id = ?", entry.id);
		});
	}

	// ---- plumbing ------------------------------------------------------------------------------

	/** Runs `fn` in one storage transaction, then arms the alarm and (optionally) starts a flush. */
	private write<T>(fn: (tx: TxContext) => T, flushNow = true): T {
		const result = this.ctx.storage.transactionSync(() => fn(this.txContext()));
		this.armAlarm(flushNow ? FLUSH_GRACE_MS : 0);
		if (flushNow) this.kickFlush();
		return result;
	}

	/**
	 * Like write, for methods that answer a LedgerResult: a Refused thrown by
	 * `fn` rolls the whole transaction back and becomes the error. A dry run
	 * always rolls back and answers what the write would have answered.
	 */
	private attempt<T extends object>(fn: (tx: TxContext) => T, dryRun = false): LedgerResult<T> {
		try {
			if (dryRun) {
				this.ctx.storage.transactionSync(() => {
					throw new DryRun(fn(this.txContext()));
				});
			}
			return { ok: true, ...this.write(fn) };
		} catch (error) {
			if (error instanceof DryRun) return { ok: true, ...(error.value as T) };
			if (error instanceof Refused) return { ok: false, error: error.error };
			throw error;
		}
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

	private txContext(): TxContext {
		return { sql: this.sql, appid: this.identity.appid, userkey: this.identity.userkey, nowMs: Date.now() };
	}

	/** Refuses a call meant for another ledger: that would be a routing bug, and would mix two users' rewards. */
	private checkIdentity(appid: string, userkey: string): void {
		const expected = ledgerName(this.identity.appid, this.identity.userkey);
		if (expected !== ledgerName(appid, userkey)) throw new Error(`ledger ${expected} called for ${ledgerName(appid, userkey)}`);
	}

	private rowById(rewarddtlid: string): RewardRow | undefined {
		const seq = seqOfRewardId(rewarddtlid, this.identity.userkey);
		return seq === null ? undefined : rewardRow(this.sql, seq);
	}

	/** The earliest moment there is work for the alarm: an outbox entry due, a hold ending or a lease ending (epoch ms). */
	private nextDue(): number | null {
		const outbox = nextOutboxDue(this.sql);
		const hold = this.sql
			.exec<{ t: string | null }>(
				`SELECT MIN(hold_until) AS t FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL
				   AND seq NOT IN (SELECT seq FROM reward_locks)`,
			)
			.one().t;
		const times = [outbox, hold === null ? null : Date.parse(hold), this.leaseDue()].filter((t): t is number => t !== null);
		return times.length ? Math.min(...times) : null;
	}

	private leaseDue(): number | null {
		const end = nextLeaseEnd(this.sql);
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
