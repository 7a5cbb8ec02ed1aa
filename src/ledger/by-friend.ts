/**
 * The reads of rewards by friend (ledger schema step 16): no index leads
 * with `friend_userkey` (a conversion's Referrer reward wrote one more row
 * for it), so these reads go through `rewards_rule_friend (ruleid,
 * friend_userkey)` once per rule: `RULES` steps through the index's first
 * column, one seek per distinct rule id this ledger has rewards of (an app's
 * rules: a handful), then `BY_FRIEND` seeks (rule, friend) for each. A
 * friend's rewards cost their own entries plus one seek per rule, whatever
 * the ledger's other rewards. Both are SQL text for a `WITH RECURSIVE`
 * clause and a subquery; `?N` names the friend's parameter.
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
