import type { ProjectionMessage } from "../db/projection-batch";
import { rewardId } from "../domain/ledger-ids";
import { webhookEvent } from "../outbox/events";
import { toHundredths } from "../rewards/money";
import { tierAmount } from "../rewards/tiers";
import { bySeqOfFriend, RULES } from "./by-friend";
import { queueCarried, recordsPart } from "./carried-records";
import { type FriendRecord, rememberFriends } from "./friends";
import { milestoneKey, milestoneReward, recordMilestoneEvent } from "./milestones";
import { insertReward, rewardRow, rewardRowByKey } from "./mutations";
import { queueConversionEvent, queueProjection } from "./outbox";
import { erasedAt } from "./privacy";
import { applyRecordedRefunds } from "./reversal";
import { rewardSummary, toLedgerReward } from "./rows";
import type { RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";
import type { ConversionAnnouncement, GrantResult, RewardGrant } from "./types";

/**
 * Creates the rewards of `grants` for this ledger's user, inside the
 * caller's transaction. Idempotent by grant key (a known key returns its
 * reward with created: false); a grant whose rule already rewarded this user
 * `rewardfrequency` times for the same friend is skipped. Amounts are
 * rounded half-up to hundredths. The `conversion.recorded` webhook of
 * `announcement` is queued in the same transaction, so it leaves with the
 * rewards it reports: inside the projection entry of a reward it created
 * (issue 33, one outbox row instead of two), the projections being collected
 * until the event is known.
 */
export function grantRewards(
	outer: TxContext,
	grants: RewardGrant[],
	announcement?: ConversionAnnouncement,
	/** This ledger's user's friend converts with this event (issue 49 piece 4, friends.ts): in the same transaction. */
	converted?: FriendRecord,
	records: GrantRecords = {},
): GrantResult {
	if (converted) rememberFriends(outer.sql, [converted], "converted");
	const tx: TxContext = announcement || records.handBack ? { ...outer, projections: new Map() } : outer;
	const handed = records.handBack ? new Map<number, RewardRow>() : undefined;
	const result = grantEach(tx, grants, handed, records.existingOnly === true);
	if (handed) return handBack(tx, result, handed);
	if (!announcement) {
		if (records.carried) queueCarried(tx.sql, records.carried, tx.nowMs);
		return result;
	}
	const projections = [...(tx.projections ?? [])];
	const carrier = result.rewards.findLast((r) => r.created);
	const event = carrier ? conversionEvent(tx, result, announcement) : undefined;
	const carrierSeq = carrier ? projections.find(([seq]) => rewardId(tx.userkey, seq) === carrier.rewarddtlid)?.[0] : undefined;
	for (const [seq, version] of projections) {
		const carries = seq === carrierSeq;
		queueProjection(tx.sql, seq, version, tx.nowMs, carries ? event : undefined, carries ? records.carried : undefined);
	}
	// A grant that created nothing (a replay) has no entry to carry it: a webhook entry of its own, and the other
	// ledger's records an entry of their own (carried-records.ts).
	if (carrierSeq === undefined) {
		queueConversionEvent(tx.sql, conversionEvent(tx, result, announcement), tx.nowMs);
		if (records.carried) queueCarried(tx.sql, records.carried, tx.nowMs);
	}
	return result;
}

/** Where a grant's records go besides its own outbox (issue 49, carried-records.ts). */
export interface GrantRecords {
	/**
	 * A conversion's referrer: the records of the grant's rewards, new or found by key, are answered (`records`)
	 * for the friend's ledger to keep, not queued here.
	 */
	handBack?: boolean;
	/** Create nothing: only hand back what an earlier attempt of the event granted (a referrer erased since it). */
	existingOnly?: boolean;
	/** A conversion's friend: its referrer's records handed back, kept in this grant's outbox entries. */
	carried?: ProjectionMessage;
}

/**
 * A grant's records handed back (GrantRecords.handBack): its rewards' rows as stored at the end of the
 * transaction; the projections of other rewards the grant changed (clawbacks settled) are queued here as ever.
 */
function handBack(tx: TxContext, result: GrantResult, handed: Map<number, RewardRow>): GrantResult {
	for (const [seq, version] of tx.projections ?? []) if (!handed.has(seq)) queueProjection(tx.sql, seq, version, tx.nowMs);
	if (handed.size === 0) return result;
	const rows = [...handed.values()].map((row) => {
		// Changed after it was read (a later grant of the same call settled a clawback against it): read as stored.
		const version = tx.projections?.get(row.seq);
		return version !== undefined && version !== row.version ? (rewardRow(tx.sql, row.seq) ?? row) : row;
	});
	return { ...result, records: JSON.stringify(recordsPart(tx.appid, tx.userkey, rows, tx.nowMs)) };
}

function grantEach(tx: TxContext, grants: RewardGrant[], handed?: Map<number, RewardRow>, existingOnly = false): GrantResult {
	// An erased user earns nothing new (a decision recorded before the erasure, completed after it, included).
	// A ledger created for this grant (tx.empty) has no erasure, no rewards and no refunds: those reads are skipped
	// (a user's first reward creates its ledger on the conversion's path).
	if (existingOnly || (!tx.empty && erasedAt(tx.sql) !== null)) {
		// What an earlier attempt granted before the erasure is still handed back: its records are nowhere else.
		for (const g of handed ? grants : []) {
			const row = rewardRowByKey(tx.sql, { ...g, key: g.milestone ? milestoneKey(g.ruleid) : g.key });
			if (row) handed?.set(row.seq, row);
		}
		return { rewards: [], skipped: grants.map((g) => ({ key: g.key, reason: "user_erased" })) };
	}
	let noRewards = tx.empty === true;
	const result: GrantResult = { rewards: [], skipped: [] };
	for (const asked of grants) {
		let grant = asked;
		if (asked.milestone) {
			// One reward per milestone rule, keyed by the rule: each event of it only counts its friend (milestones.ts).
			const due = recordMilestoneEvent(tx, { ...asked, milestone: asked.milestone });
			const key = milestoneKey(asked.ruleid);
			const paid = milestoneReward(tx.sql, asked.ruleid);
			// Paid by this very event (an earlier attempt of it): its records are handed back again.
			if (paid && paid.customid === asked.customid) handed?.set(paid.seq, paid);
			if (paid || !due) {
				result.skipped.push({ key: asked.key, reason: due ? "milestone_paid" : "milestone_pending" });
				continue;
			}
			grant = { ...asked, key };
		}
		const existing = noRewards ? null : rewardRowByKey(tx.sql, grant);
		if (existing) {
			handed?.set(existing.seq, existing);
			result.rewards.push({ ...toLedgerReward(tx.userkey, existing), created: false });
			continue;
		}
		if (grant.rewardfrequency > 0 && !noRewards) {
			// Every earlier reward counts, rejected ones too: a rejected reward must not be re-earned by repeating the event.
			const { n } = tx.sql
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
		const amount = toHundredths(grant.tiers ? tierAmount(grant.amount, grant.tiers, countingRewards(tx, grant.ruleid) + 1) : grant.amount);
		if (amount === 0 && grant.tiers) {
			result.skipped.push({ key: grant.key, reason: "zero_amount" });
			continue;
		}
		// The rules engine only produces valid amounts, so anything else is a bug, not an expected failure.
		if (amount === null || amount < 0) throw new RangeError(`invalid reward amount ${grant.amount} for grant ${grant.key}`);
		// Both return the reward as stored, also when settling clawbacks or a refund recorded earlier rewrote it.
		const inserted = insertReward(tx, grant, amount);
		noRewards = false;
		const row = tx.empty ? inserted : applyRecordedRefunds(tx, inserted);
		handed?.set(row.seq, row);
		result.rewards.push({ ...toLedgerReward(tx.userkey, row), created: true });
	}
	return result;
}

/**
 * How many rewards of a tiered rule this ledger's user has that still count
 * (not Rejected: a reversed or rejected reward stops counting). Reads the
 * rule's rewards through rewards_rule_friend_event: bounded by this user's rewards
 * of that one rule.
 */
function countingRewards(tx: TxContext, ruleid: number): number {
	return tx.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM rewards WHERE ruleid = ? AND status <> 'Rejected'", ruleid).one().n;
}

/** The `conversion.recorded` event of `announcement`: this ledger's rewards of `result`, then `otherRewards`. */
function conversionEvent(tx: TxContext, result: GrantResult, announcement: ConversionAnnouncement) {
	const rewards = [...result.rewards.map((r) => rewardSummary(tx.userkey, r)), ...announcement.otherRewards];
	return webhookEvent(tx.appid, "conversion.recorded", { ...announcement.payload, rewards }, announcement.eventid);
}

/**
 * An erasure of `friend` in its referrer's ledger (user-ledger.ts erasePerson): the Referrer rewards naming it are
 * queued for the projection again, at their versions. A conversion whose friend's grant failed after this ledger's
 * had committed, and whose friend is erased before its repeat, is refused from then on: the records this ledger
 * handed back for it (carried-records.ts) would reach D1 no other way. One entry per reward naming the friend, at an
 * erasure only; rows D1 has already are left as they are (the projection's version guard).
 */
export function reprojectNaming(tx: TxContext, friend: string): void {
	const rows = tx.sql
		.exec<{ seq: number; version: number }>(
			`WITH RECURSIVE ${RULES} SELECT seq, version FROM rewards WHERE seq IN (${bySeqOfFriend("?1")}) AND usertype = 'Referrer'`,
			friend,
		)
		.toArray();
	for (const row of rows) queueProjection(tx.sql, row.seq, row.version, tx.nowMs);
}
