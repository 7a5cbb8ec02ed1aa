import type { LedgerStatement } from "./schema-step-12";

/**
 * Ledger schema step 17 (issue 49, rows written per conversion): the event's
 * key folded into the rule index. Every reward wrote an entry in
 * `rewards_event_key (customid, key)` (UNIQUE: one reward per grant key) and
 * one in `rewards_rule_friend (ruleid, friend_userkey)` (the frequency limit,
 * a tiered rule's count, the reads by friend of step 16). One UNIQUE index
 * `rewards_rule_friend_event (ruleid, friend_userkey, customid, key)` serves
 * them all, so a reward writes 3 rows instead of 4 with a wallet entry, and
 * a conversion's two rewards 2 rows fewer.
 *
 * Why one index is enough: every reward of an event names the event's user
 * as its friend. The only writer of rewards is a grant (mutations.ts
 * insertReward, from grant.ts), and every grant comes from an event's
 * decision (rewards/rules.ts rewardsForEvent: `friend` is the event's user,
 * for a Friend rule and a Referrer rule alike; a milestone reward is a grant
 * of its N-th event, keyed by its rule, naming that event's friend). No
 * statement changes a reward's key, rule, event or friend afterwards (an
 * erasure clears the friend's email, name and image, never its userkey).
 * And an event is one user's: one customid for two users is refused (409)
 * by its gate (event-gate.ts), so its grants, its retries and its completion
 * pass (the decision frozen in the gate) name the same friend every time.
 *
 * - A grant's key: the grant knows its rule, friend, event and key, so it
 *   seeks the whole index (mutations.ts rewardRowByKey), and the index keeps
 *   it UNIQUE: with every grant of an event naming its one user, (customid,
 *   key) is unique exactly when (ruleid, friend_userkey, customid, key) is
 *   (the key names its rule: `customid:ruleid`, or `milestone:ruleid`).
 *   A milestone key stays unique across events by rewards_milestone.
 * - The frequency limit (rule and friend), a tiered rule's count (rule) and
 *   the reads by friend (by-friend.ts) seek its first one or two columns,
 *   as they sought rewards_rule_friend.
 * - An event's rewards (a refund's locks and reversal, reversal.ts; a
 *   dispute's holds, dispute-holds.ts) are read by the event and its user,
 *   which the Worker passes (`friendUserkey`, from the event's parties): one
 *   seek of (rule, friend, customid) per rule this ledger has rewards of
 *   (by-friend.ts eventRewards). A request without it (a refund prepared
 *   before this step, its payload stored without the user; a call from a
 *   Worker of the previous version during a deploy) reads by customid alone:
 *   a scan of this ledger's rewards, once per such request
 *   (test/query-plan/allowed-scans.ts).
 *
 * One transaction with its version (migrate.ts), like every step: the new
 * index is built from the rewards as they are (unique already, since
 * (customid, key) was), then the two old ones go. `IF EXISTS`: a ledger
 * without one of them (none should be) still reaches the version.
 */
export const EVENT_IN_RULE_INDEX_STEP_17: readonly LedgerStatement[] = [
	"CREATE UNIQUE INDEX rewards_rule_friend_event ON rewards(ruleid, friend_userkey, customid, key)",
	"DROP INDEX IF EXISTS rewards_rule_friend",
	"DROP INDEX IF EXISTS rewards_event_key",
];
