import type { RewardRow } from "./schema";
import type { TxContext } from "./transaction-types";
import type { RewardGrant } from "./types";

/**
 * Milestones (issue 34; docs/rewards.md, "Milestones"): a Referrer rule with
 * `milestone: N` pays its referrer once, when the N-th distinct friend has an
 * event of the rule. Every such event reaches the referrer's ledger as a
 * grant; this module keeps them (milestone_events, ledger schema step 7) and
 * says when the one reward is due. The ledger is the referrer's single
 * writer, so raced conversions of different friends cannot both be the N-th.
 */

/** The one reward of a milestone rule in a referrer's ledger: keyed by the rule, not the event. */
export const milestoneKey = (ruleid: number) => `milestone:${ruleid}`;

/** True for a key `key LIKE 'milestone:%'` matches (rewards_milestone), ASCII letters in any case as LIKE compares them. */
export const isMilestoneKey = (key: string) => /^milestone:/i.test(key);

/** The milestone reward of rule `ruleid`, or undefined: keyed by the rule, found by the partial index of milestone keys (rewards_milestone). */
export function milestoneReward(sql: SqlStorage, ruleid: number): RewardRow | undefined {
	return sql.exec<RewardRow>("SELECT * FROM rewards WHERE key = ? AND key LIKE 'milestone:%'", milestoneKey(ruleid)).toArray()[0];
}

/** The rule's distinct friends with an event no full refund took back (bounded by this referrer's events of the rule). */
export function milestoneFriends(tx: TxContext, ruleid: number): number {
	return tx.sql
		.exec<{ n: number }>("SELECT COUNT(DISTINCT friend_userkey) AS n FROM milestone_events WHERE ruleid = ? AND reversed = 0", ruleid)
		.one().n;
}

/** Keeps the event of a milestone grant (once per rule and event) and answers whether the rule's friends reach N now. */
export function recordMilestoneEvent(tx: TxContext, grant: RewardGrant & { milestone: number }): boolean {
	tx.sql.exec(
		`INSERT INTO milestone_events (ruleid, customid, friend_userkey, milestone) VALUES (?, ?, ?, ?)
		 ON CONFLICT (ruleid, customid) DO NOTHING`,
		grant.ruleid,
		grant.customid,
		grant.friend.userkey,
		grant.milestone,
	);
	return milestoneFriends(tx, grant.ruleid) >= grant.milestone;
}

/**
 * Marks the milestone events of `customid` reversed (a full refund) and
 * returns the rules whose friends fell below their N: their milestone
 * reward, if paid, must be reversed.
 */
export function reverseMilestoneEvents(tx: TxContext, customid: string): number[] {
	const rules = tx.sql
		.exec<{ ruleid: number; milestone: number }>(
			"UPDATE milestone_events SET reversed = 1 WHERE customid = ? AND reversed = 0 RETURNING ruleid, milestone",
			customid,
		)
		.toArray();
	return rules.filter((r) => milestoneFriends(tx, r.ruleid) < r.milestone).map((r) => r.ruleid);
}
