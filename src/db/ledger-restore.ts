import { rewardId } from "../domain/ledger-ids";
import { rowsOf } from "./rows";

/**
 * D1's side of a ledger's point-in-time restore (admin/ledger-restore.ts,
 * ledger/restore.ts): the friends to erase again in the restored ledger, and
 * the projection rows of rewards the restored ledger no longer has.
 */

/**
 * The userkeys of the friends `userkey` referred who were erased: a restored
 * ledger may hold copies of them from before their erasure. Read on the
 * users_erased_by_referrer index; bounded by the user's erased friends.
 */
export async function erasedFriendsOf(db: D1Database, appid: string, userkey: string): Promise<string[]> {
	const result = await db
		.prepare(
			`SELECT f.userkey FROM users f
			 WHERE f.referrer_userid = (SELECT userid FROM users WHERE appid = ?1 AND userkey = ?2) AND f.erased_at IS NOT NULL`,
		)
		.bind(appid, userkey)
		.all();
	return rowsOf<{ userkey: string }>(result).map((r) => r.userkey);
}

/** Ids updated per statement by markForgottenRewards: keeps its one JSON parameter far below D1's limits. */
const IDS_PER_STATEMENT = 500;

/**
 * The projection rows of the user's rewards numbered `from`..`to` (granted
 * after the restore time, forgotten by the restored ledger) become Rejected,
 * with a comment that says why, at `version` (the restore's epoch, above
 * every version the ledger ever sent, so a message still in the projection
 * queue cannot bring them back: db/projection.ts). Kept, not deleted: the
 * product may hold their ids, and the ledger never gives those numbers again.
 * Each statement seeks rows by primary key. Answers the rows changed.
 */
export async function markForgottenRewards(
	db: D1Database,
	appid: string,
	userkey: string,
	seqs: { from: number; to: number },
	version: number,
	nowIso: string,
	comment: string,
): Promise<number> {
	const statements: D1PreparedStatement[] = [];
	for (let start = seqs.from; start <= seqs.to; start += IDS_PER_STATEMENT) {
		const ids: string[] = [];
		for (let seq = start; seq <= Math.min(seqs.to, start + IDS_PER_STATEMENT - 1); seq++) ids.push(rewardId(userkey, seq));
		statements.push(
			db
				.prepare(
					`UPDATE rewards SET rewardstatus = 'Rejected', comment = ?1, version = ?2, updated_at = ?3
					 WHERE rewarddtlid IN (SELECT value FROM json_each(?4)) AND appid = ?5 AND userkey = ?6 AND version < ?2`,
				)
				.bind(comment, version, nowIso, JSON.stringify(ids), appid, userkey),
		);
	}
	if (statements.length === 0) return 0;
	const results = await db.batch(statements);
	return results.reduce((sum, r) => sum + (r.meta.changes ?? 0), 0);
}
