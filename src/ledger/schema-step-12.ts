/**
 * Ledger schema step 12 (issue 33, rows written per conversion): `balances`
 * and `meta` WITHOUT ROWID. A table with a declared PRIMARY KEY that is not
 * an INTEGER one keeps its rows in the rowid b-tree and its key in an
 * automatic index beside it, so each new row wrote 2 rows; WITHOUT ROWID the
 * row lives in its key's b-tree, 1 row. A new balance row (a user's first
 * reward in a campaign) and a new ledger's schema_version row each cost one
 * row less. Nothing reads either table by rowid; every read is by its key or
 * of the whole (bounded) table, and the reads that need an order say it.
 *
 * And one index entry less per Friend reward: every reward wrote an entry
 * in rewards_friend (friend_userkey, seq) and one in rewards_rule_friend
 * (ruleid, friend_userkey). rewards_friend serves the reads by friend of a
 * REFERRER's ledger (reads.ts, the rewards each friend produced for this
 * user; privacy.ts, a friend's erasure), where every reward naming another
 * user as its friend is a Referrer reward: a Friend reward lives in the
 * friend's own ledger and names the friend itself. So rewards_friend now
 * holds Referrer rewards only (partial, WHERE usertype = 'Referrer', and
 * those reads say so), and a Friend reward (one of a conversion's two)
 * writes no entry in it. rewards_rule_friend stays whole: the frequency
 * limit (rule and friend) and a tiered rule's count (rule) seek it exactly.
 * The one read by friend that also wants Friend rewards, a person's erasure
 * in their own ledger, reads the ledger's Friend rewards (bounded by the
 * person's own rewards, once per erasure: privacy.ts).
 *
 * The balances are carried over through `meta` first (a table of the newest
 * schema, so the query-plan guard can explain every statement), one meta row
 * each, as steps 10 and 11 carried rewards and outbox entries. `meta` itself
 * cannot be carried through a table of its own: its few rows (the schema
 * version, the erasure time; the carried rows are gone by then) are read into
 * this step's memory and written back into the rebuilt table, all inside the
 * step's one synchronous transaction (migrate.ts), so a failure anywhere
 * leaves the old tables and the old version as they were.
 */

/** A statement, or a function run with the ledger's SQL inside the step's transaction. */
export type LedgerStatement = string | ((sql: SqlStorage) => void);

const BALANCE_COLUMNS = "rewardunit, growthhack, campaignid, campaignname, pending, approved, claimed, owed";
const FROM_JSON = Array.from({ length: BALANCE_COLUMNS.split(",").length }, (_, i) => `m.value ->> ${i}`).join(", ");
/** The meta keys of the carried rows: 'balances_step_12:' and the row's key as JSON (unique, as the key is), a range of meta's primary key. */
const chunks = (key: string) => `${key} >= 'balances_step_12:' AND ${key} < 'balances_step_12;'`;

/** Rebuilds `meta` WITHOUT ROWID with the rows it holds (a handful: see above). */
function metaWithoutRowid(sql: SqlStorage): void {
	const rows = sql.exec<{ key: string; value: string }>("SELECT key, value FROM meta").toArray();
	sql.exec("DROP TABLE meta");
	sql.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
	for (const row of rows) sql.exec("INSERT INTO meta (key, value) VALUES (?, ?)", row.key, row.value);
}

export const WITHOUT_ROWID_STEP_12: readonly LedgerStatement[] = [
	`INSERT INTO meta (key, value) SELECT 'balances_step_12:' || json_array(rewardunit, growthhack, campaignid),
	 json_array(${BALANCE_COLUMNS}) FROM balances`,
	`DROP TABLE balances`,
	`CREATE TABLE balances (
	rewardunit TEXT NOT NULL,
	growthhack TEXT NOT NULL,
	campaignid INTEGER NOT NULL,
	campaignname TEXT NOT NULL,
	pending INTEGER NOT NULL DEFAULT 0,
	approved INTEGER NOT NULL DEFAULT 0,
	claimed INTEGER NOT NULL DEFAULT 0,
	owed INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (rewardunit, growthhack, campaignid)
) WITHOUT ROWID`,
	`INSERT INTO balances (${BALANCE_COLUMNS}) SELECT ${FROM_JSON} FROM meta m WHERE ${chunks("m.key")}`,
	`DELETE FROM meta WHERE ${chunks("key")}`,
	metaWithoutRowid,
	`DROP INDEX rewards_friend`,
	`CREATE INDEX rewards_friend ON rewards(friend_userkey, seq) WHERE usertype = 'Referrer'`,
];
