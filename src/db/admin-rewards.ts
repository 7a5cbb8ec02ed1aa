/** Admin reads of the rewards projection (written by the ledgers' outbox). */

export interface ProjectedRewardRow {
	rewarddtlid: string;
	userkey: string;
	campaignid: number;
	eventname: string;
	usertype: string;
	reward: number;
	rewardunit: string;
	rewardtype: string;
	rewardstatus: string;
	redeemed: number;
	comment: string | null;
	friend_userkey: string | null;
	created_at: string;
	updated_at: string;
}

export interface RewardFilter {
	appid: string;
	statuses: string[];
	campaignid: number | null;
	userkey: string | null;
	/** ISO bounds on created_at: from inclusive, to exclusive. */
	from: string | null;
	to: string | null;
	/** Keyset: (created_at, rewarddtlid) of the last row of the previous page. */
	after: [string, string] | null;
	limit: number;
}

/** Rewards of the app matching the filter, newest first. */
export async function listRewards(db: D1Database, f: RewardFilter): Promise<ProjectedRewardRow[]> {
	const where = ["appid = ?"];
	const args: (string | number)[] = [f.appid];
	const add = (clause: string, ...values: (string | number)[]) => {
		where.push(clause);
		args.push(...values);
	};
	if (f.statuses.length > 0) add(`rewardstatus IN (${f.statuses.map(() => "?").join(", ")})`, ...f.statuses);
	if (f.campaignid !== null) add("campaignid = ?", f.campaignid);
	if (f.userkey !== null) add("userkey = ?", f.userkey);
	if (f.from !== null) add("created_at >= ?", f.from);
	if (f.to !== null) add("created_at < ?", f.to);
	if (f.after !== null) add("(created_at, rewarddtlid) < (?, ?)", ...f.after);
	const { results } = await db
		.prepare(
			`SELECT rewarddtlid, userkey, campaignid, eventname, usertype, reward, rewardunit, rewardtype, rewardstatus, redeemed, comment,
			 friend_userkey, created_at, updated_at FROM rewards WHERE ${where.join(" AND ")}
			 ORDER BY created_at DESC, rewarddtlid DESC LIMIT ?`,
		)
		.bind(...args, f.limit)
		.all<ProjectedRewardRow>();
	return results;
}
