import type { LedgerStatement } from "./schema-step-12";

/**
 * Ledger schema step 16 (issue 49, rows written per conversion): no
 * `rewards_friend` index. A conversion that rewards a referrer wrote 5 rows
 * for that reward (the row, its event key, `rewards_rule_friend`,
 * `rewards_friend`, its wallet or hold entry); now 4, so a conversion writes
 * one row less in every scenario.
 *
 * `rewards_friend (friend_userkey, seq) WHERE usertype = 'Referrer'` served
 * only the reads by friend: the rewards each friend produced for this user
 * (getfriendsandrewards, reads.ts) and a person's erasure (privacy.ts). Both
 * now seek `rewards_rule_friend (ruleid, friend_userkey)` once per rule this
 * ledger has rewards of, the rules found by stepping through that index's
 * first column (by-friend.ts): a handful of seeks per friend (an app's
 * rules), never a scan. The conversion's own reads (a grant's frequency
 * limit by rule and friend, a tiered rule's count by rule) are unchanged.
 *
 * One statement, so the step is atomic like every step (migrate.ts runs it in
 * one transaction with its version); dropping an index moves no row, and
 * every reward reads the same afterwards. `IF EXISTS`: a ledger without the
 * index (none should be) still reaches the version
 * (test/ledger/schema-step-16.integration.test.ts).
 */
export const NO_FRIEND_INDEX_STEP_16: readonly LedgerStatement[] = ["DROP INDEX IF EXISTS rewards_friend"];
