/**
 * The reads of rewards by friend (ledger schema step 16): no index leads
 * with `friend_userkey` (a conversion's Referrer reward wrote one more row
 * for it), so these reads go through `rewards_rule_friend_event (ruleid,
 * friend_userkey, customid, key)` (step 17) once per rule: `RULES` steps
 * through the index's first column, one seek per distinct rule id this
 * ledger has rewards of (an app's rules: a handful), then `BY_FRIEND` seeks
 * (rule, friend) for each. A friend's rewards cost their own entries plus
 * one seek per rule, whatever the ledger's other rewards. Both are SQL text
 * for a `WITH RECURSIVE` clause and a subquery; `?N` names the friend's
 * parameter.
 */

/** The distinct rule ids of this ledger's rewards, ascending, then one NULL row that ends the recursion. */
export const RULES = `rules(id) AS (
	SELECT MIN(ruleid) FROM rewards
	UNION ALL
	SELECT (SELECT MIN(ruleid) FROM rewards WHERE ruleid > rules.id) FROM rules WHERE rules.id IS NOT NULL
)`;

/** The reward numbers naming `friend` (an SQL expression) as their friend, every rule: needs `RULES` in the WITH clause. */
export const bySeqOfFriend = (friend: string) =>
	`SELECT n.seq FROM rules JOIN rewards n ON n.ruleid = rules.id AND n.friend_userkey = ${friend} WHERE rules.id IS NOT NULL`;

/** A reward of an event: its number and its key (a milestone's names its rule: milestones.ts). */
export type EventReward = { seq: number; key: string };

/**
 * This ledger's rewards of event `customid`, by number. Every reward of an
 * event names the event's user as its friend (schema-step-17.ts), so with
 * `friend` (the event's user, which the Worker passes) they are one seek of
 * (rule, friend, customid) per rule, in the index alone; the rules stay the
 * outer loop (CROSS JOIN). Without it (a request from before step 17: a
 * refund prepared then, whose stored payload lacks the user; a call from a
 * Worker of the previous version during a deploy) the read is by customid
 * alone, which no index leads with since step 17: a scan of this ledger's
 * rewards, once per such request (test/query-plan/allowed-scans.ts).
 */
export function eventRewards(sql: SqlStorage, customid: string, friend: string | undefined): EventReward[] {
	if (friend === undefined)
		return sql.exec<EventReward>("SELECT seq, key FROM rewards WHERE customid = ? ORDER BY seq", customid).toArray();
	return sql
		.exec<EventReward>(
			`WITH RECURSIVE ${RULES} SELECT n.seq, n.key FROM rules CROSS JOIN rewards n
			 WHERE rules.id IS NOT NULL AND n.ruleid = rules.id AND n.friend_userkey = ?1 AND n.customid = ?2 ORDER BY n.seq`,
			friend,
			customid,
		)
		.toArray();
}
