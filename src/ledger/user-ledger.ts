import { DurableObject } from "cloudflare:workers";
import { ledgerName, parseLedgerName } from "../domain/ledger-ids";
import { instrumentEnv } from "../instrument/d1-metrics";
import { countingStorage } from "../instrument/ledger-rows";
import { countPart } from "../instrument/platform-parts";
import { toHundredths } from "../rewards/money";
import { auditRedemption, type LedgerAudit } from "./audit";
import { listClawbacks } from "./clawbacks";
import { redactComments } from "./comment-redaction";
import { grantWithReferrer, type ReferrerSide } from "./conversion-grant";
import { applyDisputePhase, type DisputeRequest } from "./dispute-holds";
import { FlushSchedule } from "./flush-schedule";
import { type FriendRecord, type FriendsPage, type FriendsPageAsk, type FriendWrite, friendsPage, rememberFriends } from "./friends";
import { fillFriends } from "./friends-fill";
import { grantRewards, reprojectNaming } from "./grant";
import { rewardRowById } from "./mutations";
import type { SentEntry } from "./outbox-entries";
import {
	claimPayout,
	type PayoutClaim,
	type PayoutFailure,
	payoutPaid,
	payoutRefused,
	redrivePayouts,
	retryDuePayouts,
} from "./payout-outcome";
import { type PayoutOutcome, payoutUnknown, resolvePayout } from "./payout-resolution";
import { payoutsOf } from "./payouts";
import { erasedAt, erasePersonInLedger, eraseTestLedger } from "./privacy";
import { changeProfile, type ProfileChange, type ProfileRead, readProfile } from "./profile";
import { balances, listRewards, rewardsForFriends } from "./reads";
import { redeemAmount, redeemRewards } from "./redemption";
import { noSuchRewards } from "./refused";
import { type RestoreAnswer, type RestoreStep, runRestoreStep } from "./restore";
import { toLedgerReward } from "./rows";
import { type ClawbackRow, LEDGER_MIGRATIONS, type PayoutRow } from "./schema";
import { applyOperation } from "./transaction-kinds";
import type { LedgerOperation, LedgerOperationResult } from "./transaction-types";
import { abortTransaction, commitTransaction, type PrepareAnswer, prepareTransaction } from "./transactions";
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
	Redemption,
	RewardGrant,
	RewardView,
	StatusChange,
} from "./types";
import { type LedgerIdentity, LedgerWriter } from "./writer";

/**
 * One per (app, user): the single writer of that user's rewards, redemptions
 * and balance. Every method checks and writes inside one synchronous storage
 * transaction (writer.ts), so concurrent calls can never interleave between
 * a check and the write that depends on it. What must leave the object goes
 * through the outbox (see outbox.ts), flushed right after each write and by
 * the alarm (flush-schedule.ts). This class is the RPC surface; each concern
 * lives in its own module: grant.ts, redemption.ts, status-changes.ts,
 * reversal.ts (refunds), transactions.ts (prepare/commit/abort), reads.ts.
 */
export class UserLedger extends DurableObject<Env> {
	/** Who this ledger belongs to, from the name it was created by (`ledgerFor`), so it is known before any write. */
	private readonly identity: LedgerIdentity;
	private readonly writer: LedgerWriter;
	private readonly schedule: FlushSchedule;
	private filling: Promise<boolean> | undefined; // the fill of its friends from D1 under way (friends-fill.ts), shared

	constructor(ctx: DurableObjectState, env: Env) {
		// With the bench's D1_QUERY_COUNT flag, this ledger's D1 use (its outbox flushes) is counted too.
		super(ctx, instrumentEnv(env, "ledger"));
		countPart("ledgerStarts");
		const identity = ctx.id.name === undefined ? null : parseLedgerName(ctx.id.name);
		if (!identity) throw new Error(`UserLedger must be created by name (appid:userkey), got ${ctx.id.name ?? "an unnamed id"}`);
		this.identity = identity;
		// The tables are created by the first write (writer.ts), so reads of a made-up id store nothing.
		const storage = countingStorage(ctx.storage, env);
		this.writer = new LedgerWriter(storage, identity, (flushNow) => this.schedule.afterWrite(flushNow), LEDGER_MIGRATIONS);
		this.schedule = new FlushSchedule(ctx, this.env, this.writer, storage);
		if (this.writer.hasSchema()) this.schedule.rearmAfterRestart();
	}

	// ---- rewards -------------------------------------------------------------------------------

	/**
	 * Creates the rewards of `grants` for this user (see grant.ts): idempotent by grant key, within `rewardfrequency`.
	 * `carry`: the caller's ledger sends this one's records with its own (`carried`, conversion-grant.ts); "records": and
	 * keeps these rewards' records ("existing": creating none; carried-records.ts). `converted`: friends.ts.
	 */
	grant(
		appid: string,
		userkey: string,
		grants: RewardGrant[],
		announcement?: ConversionAnnouncement,
		carry: boolean | "records" | "existing" = false,
		converted?: FriendRecord,
	): GrantResult {
		this.checkIdentity(appid, userkey);
		const records = { handBack: (carry === "records" || carry === "existing") && !announcement, existingOnly: carry === "existing" };
		const result = this.writer.write((tx) => grantRewards(tx, grants, announcement, converted, records), records.handBack ? null : true);
		if (!carry) return result;
		// In the write's synchronous step, before its flush starts: the flush then finds these entries held.
		const carried = this.schedule.recordsToCarry(records.handBack);
		return carried ? { ...result, carried: JSON.stringify(carried) } : result;
	}

	/** A conversion's grants for this user (its friend) and, at the same time, its referrer's, then its webhook (see conversion-grant.ts). */
	grantWithReferrer(
		appid: string,
		userkey: string,
		grants: RewardGrant[],
		announcement: ConversionAnnouncement,
		referrer: ReferrerSide,
	): Promise<{ friend: GrantResult; referrer: GrantResult }> {
		this.checkIdentity(appid, userkey);
		return grantWithReferrer(this.writer, this.env, grants, announcement, referrer, (part) => this.schedule.carry(part));
	}

	/** One reward of this ledger by its public id, or null (tests and admin). */
	getReward(rewarddtlid: string): LedgerReward | null {
		if (!this.writer.hasSchema()) return null;
		const row = rewardRowById(this.writer.sql, this.identity.userkey, rewarddtlid);
		return row ? toLedgerReward(this.identity.userkey, row) : null;
	}

	/** The order id (`customid`) of the event reward `rewarddtlid` was granted for, or null: the admin's reward page. */
	rewardOrderId(rewarddtlid: string): string | null {
		if (!this.writer.hasSchema()) return null;
		return rewardRowById(this.writer.sql, this.identity.userkey, rewarddtlid)?.customid ?? null;
	}

	/** One reward for its user (checkrewardstatus): refused once the user is erased, else the reward or reward_not_found. */
	findReward(rewarddtlid: string): LedgerResult<{ reward: LedgerReward }> {
		if (!this.writer.hasSchema()) return { ok: false, error: { code: "reward_not_found", rewarddtlid, message: "no such reward" } };
		if (erasedAt(this.writer.sql) !== null) return { ok: false, error: { code: "user_erased", message: "the user was erased" } };
		const reward = this.getReward(rewarddtlid);
		return reward ? { ok: true, reward } : { ok: false, error: { code: "reward_not_found", rewarddtlid, message: "no such reward" } };
	}

	/** Rewards of this ledger, oldest first, a page at a time: at most `limit` (<= 1000) after reward number `afterSeq` (tests and admin). */
	listRewards(limit = 1000, afterSeq = 0): LedgerReward[] {
		if (!this.writer.hasSchema()) return [];
		return listRewards(this.writer.sql, this.identity.userkey, limit, afterSeq);
	}

	/** Every clawback of this ledger, oldest first (tests and admin; amounts in hundredths). */
	listClawbacks(): ClawbackRow[] {
		if (!this.writer.hasSchema()) return [];
		return listClawbacks(this.writer.sql);
	}

	/**
	 * The newest `limit` rewards each of the given friends produced for this user, and how many in all (see reads.ts);
	 * `shownToUser` (the public getfriendsandrewards) marks the coupon codes it answers as seen.
	 */
	rewardsForFriends(friendUserkeys: string[], limit = 100, shownToUser = false): Record<string, { rewards: RewardView[]; total: number }> {
		if (!this.writer.hasSchema()) return {};
		return this.writer.transactionSync(() => rewardsForFriends(this.writer.sql, this.identity.userkey, friendUserkeys, limit, shownToUser));
	}

	/** Issue 49 piece 4: keeps `friends` of this user (a referrer) as `how` says (friends.ts); answers the counts after it. */
	rememberFriends(appid: string, userkey: string, friends: FriendRecord[], how: FriendWrite, priorFriends?: number) {
		this.checkIdentity(appid, userkey);
		return this.writer.transactionSync(() => rememberFriends(this.writer.sql, friends, how, { priorFriends }));
	}

	/** A page of friends with their rewards from this ledger alone, or null until its friends are all here (friends-fill.ts). */
	friendsPage(page: FriendsPageAsk): FriendsPage | null {
		if (!this.writer.hasSchema()) return null;
		return this.writer.transactionSync(() => friendsPage(this.writer.sql, this.identity.userkey, page, erasedAt(this.writer.sql) !== null));
	}

	/** Copies this user's friends from D1, at most `maxPages` pages (friends-fill.ts); true once all are here. */
	fillFriends(appid: string, userkey: string, user: { userid: number; friends: number }, maxPages: number): Promise<boolean> {
		this.checkIdentity(appid, userkey);
		this.filling ??= fillFriends(this.writer, this.env.DB, user, maxPages).finally(() => {
			this.filling = undefined;
		});
		return this.filling;
	}

	/** getuserbalance, read from the running totals only (cost grows with campaigns, not rewards). */
	balance(filter: BalanceFilter = {}): BalanceRecord[] {
		if (!this.writer.hasSchema()) return [];
		return balances(this.writer.sql, filter);
	}

	/** balance for its user (getuserbalance answered by the ledger alone): null once the user is erased. */
	liveBalance(filter: BalanceFilter = {}): BalanceRecord[] | null {
		if (!this.writer.hasSchema()) return [];
		return erasedAt(this.writer.sql) === null ? balances(this.writer.sql, filter) : null;
	}

	/** Issue 49: the user's profile kept here (null: none, read it from D1 and `changeProfile` a fill), with its generation. */
	profile(): ProfileRead {
		if (!this.writer.hasSchema()) return { profile: null, generation: 0 };
		return readProfile(this.writer.sql);
	}

	/** Keeps or forgets the profile (profile.ts): answers the generation it is now at, null for a fill that lost a race. */
	changeProfile(appid: string, userkey: string, change: ProfileChange): number | null {
		this.checkIdentity(appid, userkey);
		return this.writer.transactionSync(() => changeProfile(this.writer.sql, change));
	}

	// ---- privacy -------------------------------------------------------------------------------

	/**
	 * Erases what this ledger copied from a person (friend snapshots, pending webhooks); money untouched (see
	 * privacy.ts). In the person's own ledger the erasure is recorded and refuses later changes. Then waits for
	 * a flush, so a flush that was under way (with payloads read before the erasure) has written them to D1
	 * before the caller erases D1, which redacts them there too.
	 */
	async erasePerson(
		personUserkey: string,
		values: string[],
		/** The person as this ledger's user's friend, in its referrer's ledger (privacy.ts). */
		asFriend?: FriendRecord,
	): Promise<{ rewards: number; webhooks: number; atMs: number }> {
		const own = personUserkey === this.identity.userkey ? { at: new Date().toISOString() } : null;
		const done = this.writer.transactionSync(() => {
			const erased = erasePersonInLedger(this.writer.sql, personUserkey, values, own, asFriend);
			// In its own ledger, comments lose its values and customer ids (older code kept Stripe's "No such customer").
			if (own) redactComments(this.writer.sql, values);
			else reprojectNaming(this.writer.context(), personUserkey);
			return erased;
		});
		// On this ledger's clock, as its projection messages' sentAt: one sent before the redaction has sentAt <= atMs
		// (records-queued.ts reads what it sends in the same synchronous step), which D1's erasure time then covers.
		const atMs = Date.now();
		await this.schedule.flush(true).catch((error) => console.error("ledger flush after an erasure failed", error));
		return { ...done, atMs };
	}

	// ---- status changes and multi-ledger transactions ------------------------------------------------------------------------

	/** Checks `changes` as changeStatuses would and answers what they would give, changing nothing. */
	validateStatusChanges(changes: StatusChange[]): LedgerResult<LedgerOperationResult> {
		if (!this.writer.hasSchema()) return noSuchRewards(changes);
		return this.writer.attempt((tx) => applyOperation(tx, { kind: "status", changes }), true);
	}

	/** changerewardstatus within this ledger alone: every change or none (decisions.md §4). */
	changeStatuses(changes: StatusChange[]): LedgerResult<LedgerOperationResult> {
		return this.execute({ kind: "status", changes });
	}

	/** Applies a ledger operation (transaction-kinds.ts) at once, in one transaction: for a change that concerns this ledger only. */
	execute(operation: LedgerOperation): LedgerResult<LedgerOperationResult> {
		if (!this.writer.hasSchema() && operation.kind === "status") return noSuchRewards(operation.changes);
		return this.writer.attempt((tx) => applyOperation(tx, operation));
	}

	/** Phase one of a multi-ledger transaction (coordination/ledger-transaction.ts): a dry run, then the rewards locked for the lease. */
	prepareTransaction(txid: string, operation: LedgerOperation, leaseMs: number): LedgerResult<PrepareAnswer> {
		if (!this.writer.hasSchema() && operation.kind === "status") return noSuchRewards(operation.changes);
		// A refund reaches the ledgers of an event's parties, which exist in D1: it may be this ledger's first write.
		this.writer.ensureSchema();
		return prepareTransaction(this.writer, txid, operation, leaseMs);
	}

	/** Phase two: applies the prepared operation and releases its locks; only called once `commit` is stored in D1. */
	commitTransaction(txid: string): LedgerResult<{ result: LedgerOperationResult }> {
		this.writer.ensureSchema();
		return commitTransaction(this.writer, txid);
	}

	/** Releases a prepared transaction without applying it. An unknown txid is recorded as aborted, so a late prepare is refused. */
	abortTransaction(txid: string): LedgerResult<{ state: "aborted" | "committed" }> {
		// Nothing was ever prepared in a ledger without tables, and no prepare of rewards can succeed there.
		if (!this.writer.hasSchema()) return { ok: true, state: "aborted" };
		return abortTransaction(this.writer, txid);
	}

	/** A Stripe dispute's hold, restore or release of one conversion's rewards in this ledger (dispute-holds.ts). */
	disputePhase(appid: string, userkey: string, request: DisputeRequest): LedgerResult<{ rewards: LedgerReward[] }> {
		this.checkIdentity(appid, userkey);
		// A ledger without tables has no reward of the event: nothing to hold.
		if (!this.writer.hasSchema()) return { ok: true, rewards: [] };
		return this.writer.attempt((tx) => applyDisputePhase(tx, request));
	}

	// ---- redemption ----------------------------------------------------------------------------

	/** Redeems `amount` from the user's approved wallet rewards, oldest first; more than is available is refused whole. */
	redeemByAmount(request: RedeemByAmount, audit?: LedgerAudit): LedgerResult<Redemption> {
		const amount = toHundredths(request.amount);
		if (amount === null || amount <= 0) return { ok: false, error: { code: "invalid_amount", message: "amount must be a number above 0" } };
		return this.writer.attempt((tx) => auditRedemption(tx, audit, request.idempotency?.key, redeemAmount(tx, request, amount)));
	}

	/** Redeems the whole remaining amount of each reward; all must be this user's approved wallet rewards, else none is redeemed. */
	redeemByIds(ids: string[], idempotency?: LedgerIdempotency, audit?: LedgerAudit): LedgerResult<Redemption> {
		return this.writer.attempt((tx) => auditRedemption(tx, audit, idempotency?.key, redeemRewards(tx, ids, idempotency)));
	}

	// ---- Stripe payouts (payouts.ts, payout-outcome.ts) ----------------------------------------

	/** Marks payout `n` of reward `seq` as sending (freezing its customer) and answers what to send, before the call leaves. */
	claimPayout(seq: number, n: number, customer: string | null, connected: boolean): LedgerResult<{ claim: PayoutClaim }> {
		if (!this.writer.hasSchema()) return { ok: true, claim: { settled: true } };
		return this.writer.attempt((tx) => ({ claim: claimPayout(tx, seq, n, customer, connected) }));
	}

	/** Stripe created balance transaction `stripeId` for payout `n` of reward `seq`. */
	payoutPaid(seq: number, n: number, stripeId: string, requestId: string | null): LedgerResult<{ changed: boolean }> {
		if (!this.writer.hasSchema()) return { ok: true, changed: false };
		return this.writer.attempt((tx) => ({ changed: payoutPaid(tx, seq, n, stripeId, requestId) }));
	}

	/** Stripe refused payout `n` of reward `seq` (a 4xx), or it could not leave. */
	payoutRefused(seq: number, n: number, failure: PayoutFailure): LedgerResult<{ changed: boolean }> {
		if (!this.writer.hasSchema()) return { ok: true, changed: false };
		return this.writer.attempt((tx) => ({ changed: payoutRefused(tx, seq, n, failure) }));
	}

	/** What Stripe's record says about unknown payout `n` of reward `seq` (payout-resolution.ts). */
	resolvePayout(seq: number, n: number, outcome: PayoutOutcome): LedgerResult<{ changed: boolean }> {
		if (!this.writer.hasSchema()) return { ok: true, changed: false };
		return this.writer.attempt((tx) => ({ changed: resolvePayout(tx, seq, n, outcome) }));
	}

	/** Payout `n` of reward `seq` has an outcome nobody can learn by sending it again: look it up (payout-resolution.ts). */
	payoutUnknown(seq: number, n: number): LedgerResult<{ changed: boolean }> {
		if (!this.writer.hasSchema()) return { ok: true, changed: false };
		return this.writer.attempt((tx) => ({ changed: payoutUnknown(tx, seq, n) }));
	}

	/** Books again what each Stripe reward owes, also after a failed payout (a paymentcustomerid was set, or a retry). */
	retryPayouts(): LedgerResult<{ queued: number }> {
		if (!this.writer.hasSchema()) return { ok: true, queued: 0 };
		return this.writer.attempt((tx) => retryDuePayouts(tx));
	}

	/** The scheduled job's re-drive of payouts untouched for `staleMs` (payout-outcome.ts). */
	redrivePayouts(staleMs: number, keyLifetimeMs?: number): LedgerResult<{ redriven: number; failed: number }> {
		if (!this.writer.hasSchema()) return { ok: true, redriven: 0, failed: 0 };
		return this.writer.attempt((tx) => redrivePayouts(tx, staleMs, keyLifetimeMs));
	}

	/** The payout records of reward `seq` (amounts in hundredths), for operators and tests. */
	payouts(seq: number): PayoutRow[] {
		if (!this.writer.hasSchema()) return [];
		return payoutsOf(this.ctx.storage.sql, seq);
	}

	// ---- alarm and outbox ----------------------------------------------------------------------

	/** Resolves ended leases, approves the holds that have ended, then delivers the outbox; re-arms itself for what is left. */
	override alarm(): Promise<void> {
		if (!this.writer.hasSchema()) return Promise.resolve();
		return this.schedule.alarm();
	}

	/**
	 * Delivers the outbox now, straight to D1 (not through the queue), so D1 shows this ledger's changes when it
	 * returns (a status change's, for the admin's review queue; an erasure's), and the records it keeps for others: a
	 * conversion's referrer's new rewards are its friend's to deliver (carried-records.ts). Waits for a running flush.
	 */
	flush(): Promise<FlushReport> {
		if (!this.writer.hasSchema()) return Promise.resolve({ done: 0, pending: 0 });
		return this.schedule.flush(true);
	}

	/** The projection queue's consumer wrote these outbox entries to D1 (records-queued.ts): they go. */
	projectionWritten(acks: SentEntry[]): void {
		this.schedule.projectionWritten(acks);
	}

	/**
	 * Point-in-time restore of this ledger (restore.ts; admin/ledger-restore.ts): `restore` sets the storage to
	 * restore on its next start and aborts the object; `resync`, on the restored object, sends it to D1 again.
	 */
	async restoreLedger(appid: string, userkey: string, step: RestoreStep): Promise<RestoreAnswer> {
		this.checkIdentity(appid, userkey);
		return runRestoreStep(this.ctx.storage, this.writer, step, {
			abort: () => this.ctx.abort("ledger restored"),
			flush: () => this.schedule.flush(true),
		});
	}

	/** Erases this ledger whole, alarm included, if it is a test twin's: DELETE .../testdata (privacy.ts eraseTestLedger). */
	eraseTestLedger(appid: string, userkey: string): Promise<boolean> {
		this.checkIdentity(appid, userkey);
		return eraseTestLedger(this.ctx.storage, this.writer, this.identity.appid);
	}

	/** Refuses a call meant for another ledger: that would be a routing bug, and would mix two users' rewards. */
	private checkIdentity(appid: string, userkey: string): void {
		const expected = ledgerName(this.identity.appid, this.identity.userkey);
		if (expected !== ledgerName(appid, userkey)) throw new Error(`ledger ${expected} called for ${ledgerName(appid, userkey)}`);
	}
}
