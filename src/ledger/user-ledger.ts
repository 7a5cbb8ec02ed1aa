import { DurableObject } from "cloudflare:workers";
import { instrumentEnv } from "../http/d1-metrics";
import { type BalanceRow, nestBalances } from "./balance";
import { fromHundredths, toHundredths } from "./money";
import { insertReward, rewardRow, rewardRowByKey, type TxContext, updateReward } from "./mutations";
import { type AssignedCoupon, type CouponClaim, type FlushHost, flushOutbox, nextOutboxDue } from "./outbox";
import { allocateOldestFirst, available } from "./redeem";
import { toLedgerReward, toView } from "./rows";
import { LEDGER_SCHEMA, type OutboxRow, type RewardRow } from "./schema";
import { transitionError } from "./status";
import { ledgerName, seqOfRewardId } from "./stub";
import type {
	BalanceFilter,
	BalanceRecord,
	FlushReport,
	GrantResult,
	LedgerError,
	LedgerResult,
	LedgerReward,
	RedeemByAmount,
	RewardGrant,
	RewardStatus,
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
/** SQLite in Durable Objects binds at most 100 parameters per statement. */
const IN_CHUNK = 90;

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

/** Thrown inside a transaction to roll it back with an expected failure. */
class Refused extends Error {
	constructor(readonly error: LedgerError) {
		super(error.message);
	}
}

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
	private identity: { appid: string; userkey: string } | null;
	private flushing: Promise<FlushReport> | null = null;
	private flushAgain = false;
	private flushSoon: Promise<void> | null = null;

	constructor(ctx: DurableObjectState, env: Env) {
		// With the bench's D1_QUERY_COUNT flag, this ledger's D1 use (its outbox flushes) is counted too.
		super(ctx, instrumentEnv(env, "ledger"));
		this.sql = ctx.storage.sql;
		for (const statement of LEDGER_SCHEMA) this.sql.exec(statement);
		const meta = new Map(
			this.sql
				.exec<{ key: string; value: string }>("SELECT key, value FROM meta")
				.toArray()
				.map((r) => [r.key, r.value]),
		);
		const appid = meta.get("appid");
		const userkey = meta.get("userkey");
		this.identity = appid && userkey ? { appid, userkey } : null;
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
	grant(appid: string, userkey: string, grants: RewardGrant[]): GrantResult {
		this.checkIdentity(appid, userkey);
		return this.write((tx) => {
			this.bind(tx.sql, appid, userkey);
			const ctx = { ...tx, appid, userkey };
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
				result.rewards.push({ ...toLedgerReward(userkey, insertReward(ctx, grant, amount)), created: true });
			}
			return result;
		});
	}

	/** One reward of this ledger by its public id, or null. */
	getReward(rewarddtlid: string): LedgerReward | null {
		const row = this.rowById(rewarddtlid);
		return row && this.identity ? toLedgerReward(this.identity.userkey, row) : null;
	}

	/** Every reward of this ledger, oldest first (tests and admin). */
	listRewards(): LedgerReward[] {
		const userkey = this.identity?.userkey;
		if (!userkey) return [];
		return this.sql
			.exec<RewardRow>("SELECT * FROM rewards ORDER BY seq")
			.toArray()
			.map((row) => toLedgerReward(userkey, row));
	}

	/** The rewards each of the given friends produced for this user, oldest first; every friend asked for gets a (maybe empty) list. */
	rewardsForFriends(friendUserkeys: string[]): Record<string, RewardView[]> {
		const out: Record<string, RewardView[]> = {};
		const unique = [...new Set(friendUserkeys)];
		for (const key of unique) out[key] = [];
		const userkey = this.identity?.userkey;
		if (!userkey) return out;
		for (let i = 0; i < unique.length; i += IN_CHUNK) {
			const chunk = unique.slice(i, i + IN_CHUNK);
			const rows = this.sql
				.exec<RewardRow>(`SELECT * FROM rewards WHERE friend_userkey IN (${chunk.map(() => "?").join(", ")}) ORDER BY seq`, ...chunk)
				.toArray();
			for (const row of rows) out[row.friend_userkey]?.push(toView(userkey, row));
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

	// ---- status changes ------------------------------------------------------------------------

	/** Checks `changes` as changeStatuses would and answers what they would give, changing nothing. */
	validateStatusChanges(changes: StatusChange[]): LedgerResult<{ rewards: LedgerReward[] }> {
		return this.attempt((tx) => ({ rewards: this.applyStatusChanges(tx, changes) }), true);
	}

	/**
	 * Applies every change or none (decisions.md §4). The entry's message
	 * becomes the comment; any change made by hand ends the automatic approval
	 * of a hold.
	 */
	changeStatuses(changes: StatusChange[]): LedgerResult<{ rewards: LedgerReward[] }> {
		return this.attempt((tx) => ({ rewards: this.applyStatusChanges(tx, changes) }));
	}

	private applyStatusChanges(tx: TxContext, changes: StatusChange[]): LedgerReward[] {
		const touched = new Map<number, RewardRow>();
		for (const change of changes) {
			const before = this.rowById(change.rewarddtlid);
			if (!before) throw new Refused({ code: "reward_not_found", rewarddtlid: change.rewarddtlid, message: "no such reward" });
			const refusal = transitionError({ status: before.status as RewardStatus, redeemed: before.redeemed }, change.status);
			if (refusal) throw new Refused({ code: "invalid_status_transition", rewarddtlid: change.rewarddtlid, message: refusal });
			const patch = { status: change.status, comment: change.message ?? before.comment, hold_until: null };
			const changed = before.status !== change.status;
			const after = updateReward(
				tx,
				before,
				patch,
				changed ? { type: "reward.status_changed", extra: { previousstatus: before.status } } : undefined,
			);
			touched.set(after.seq, after);
		}
		return [...touched.values()].map((row) => toLedgerReward(tx.userkey, row));
	}

	// ---- redemption ----------------------------------------------------------------------------

	/**
	 * Redeems `amount` from the user's approved wallet rewards, oldest first,
	 * the last one in part when needed; more than is available is refused whole.
	 */
	redeemByAmount(request: RedeemByAmount): LedgerResult<{ redeemed: number; rewards: LedgerReward[] }> {
		const amount = toHundredths(request.amount);
		if (amount === null || amount <= 0) return { ok: false, error: { code: "invalid_amount", message: "amount must be a number above 0" } };
		return this.attempt((tx) => {
			const filter = filterClause(request);
			const where = ["status = 'Approved'", "rewardtype = 'InstoreCredits'", "amount > redeemed", ...filter.where];
			const args = filter.args;
			// Read oldest first only until the amount is covered (through the rewards_wallet index), so a
			// redemption costs what it takes, not the user's whole history; a refusal still reads them all.
			const candidates: { seq: number; remaining: number }[] = [];
			let covered = 0;
			for (const row of this.sql.exec<{ seq: number; remaining: number }>(
				`SELECT seq, amount - redeemed AS remaining FROM rewards WHERE ${where.join(" AND ")} ORDER BY seq`,
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
			const rewards = allocations.map(({ seq, take }) => this.redeem(tx, rewardRow(this.sql, seq)!, take));
			return { redeemed: fromHundredths(amount), rewards };
		});
	}

	/** Redeems the whole remaining amount of each reward; all must be this user's approved wallet rewards, else none is redeemed. */
	redeemByIds(ids: string[]): LedgerResult<{ redeemed: number; rewards: LedgerReward[] }> {
		return this.attempt((tx) => {
			let total = 0;
			const rewards: LedgerReward[] = [];
			for (const id of new Set(ids)) {
				const row = this.rowById(id);
				if (!row) throw new Refused({ code: "reward_not_found", rewarddtlid: id, message: "no such reward" });
				if (row.rewardtype !== "InstoreCredits" || row.status !== "Approved" || row.amount <= row.redeemed) {
					throw new Refused({
						code: "reward_not_redeemable",
						rewarddtlid: id,
						message: row.rewardtype !== "InstoreCredits" ? `${row.rewardtype} rewards are not redeemed here` : `reward is ${row.status}`,
					});
				}
				total += row.amount - row.redeemed;
				rewards.push(this.redeem(tx, row, row.amount - row.redeemed));
			}
			return { redeemed: fromHundredths(total), rewards };
		});
	}

	private redeem(tx: TxContext, before: RewardRow, take: number): LedgerReward {
		const redeemed = before.redeemed + take;
		const full = redeemed === before.amount;
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
		if (this.identity) {
			this.write((tx) => {
				const ended = this.sql
					.exec<RewardRow>(
						"SELECT * FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL AND hold_until <= ? ORDER BY seq",
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
		}
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
				if (!this.identity) return report;
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
		this.flushing = run();
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
		return { sql: this.sql, appid: this.identity?.appid ?? "", userkey: this.identity?.userkey ?? "", nowMs: Date.now() };
	}

	/** Refuses a call meant for another ledger: that would be a routing bug, and would mix two users' rewards. */
	private checkIdentity(appid: string, userkey: string): void {
		const expected = this.identity ? ledgerName(this.identity.appid, this.identity.userkey) : this.ctx.id.name;
		if (expected !== undefined && expected !== ledgerName(appid, userkey)) {
			throw new Error(`ledger ${expected} called for ${ledgerName(appid, userkey)}`);
		}
	}

	/** Learns the identity of this ledger on its first grant (checked by checkIdentity before). */
	private bind(sql: SqlStorage, appid: string, userkey: string): void {
		if (this.identity) return;
		sql.exec("INSERT INTO meta (key, value) VALUES ('appid', ?), ('userkey', ?)", appid, userkey);
		this.identity = { appid, userkey };
	}

	private rowById(rewarddtlid: string): RewardRow | undefined {
		if (!this.identity) return undefined;
		const seq = seqOfRewardId(rewarddtlid, this.identity.userkey);
		return seq === null ? undefined : rewardRow(this.sql, seq);
	}

	/** The earliest moment there is work for the alarm: an outbox entry due or a hold ending (epoch ms). */
	private nextDue(): number | null {
		const outbox = nextOutboxDue(this.sql);
		const hold = this.sql
			.exec<{ t: string | null }>("SELECT MIN(hold_until) AS t FROM rewards WHERE status = 'UnderReview' AND hold_until IS NOT NULL")
			.one().t;
		const times = [outbox, hold === null ? null : Date.parse(hold)].filter((t): t is number => t !== null);
		return times.length ? Math.min(...times) : null;
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
