import { userkeyOfRewardId } from "../domain/ledger-ids";
import { compareKeys } from "../domain/shard-merge";
import { listRewards, type ProjectedRewardRow, REWARD_COLUMNS, type RewardFilter, rewardFilterSql } from "./admin-rewards";
import { appLayout } from "./app-layout";
import { onEveryShard } from "./fanout";
import { rowsOf } from "./rows";
import { type ShardedEnv, shardPool } from "./shards";

/**
 * The rewards projection read for either layout (issue 50 phase 2b-1,
 * docs/scaling.md "Admin views across shards"). An app in the "one" layout
 * is read as before (db/admin-rewards.ts, one statement joining `users`). A
 * sharded app's rewards are in their owners' shards, which hold no `users`:
 * each shard answers its first `limit` rows of the filter in the list's
 * order, the merge keeps the first `limit` by (created_at, rewarddtlid)
 * descending (a reward id is unique across shards, so the page is the one
 * database's, and the cursor keeps its shape), then ONE read of the control
 * database names the people of the page by their unique userkeys. A filter
 * on one user (or one reward, whose id names its owner) asks that user's
 * shard only.
 */

type ShardReward = Omit<
	ProjectedRewardRow,
	"owner_email" | "owner_name" | "owner_referrer_userkey" | "owner_referrer_email" | "owner_referrer_name" | "friend_email" | "friend_name"
>;

interface PersonRow {
	userkey: string;
	email: string | null;
	name: string | null;
	referrer_userkey: string | null;
	referrer_email: string | null;
	referrer_name: string | null;
}

/** Users by userkey with their referrer: one statement, a seek of the unique userkey per key (a JSON array parameter). */
async function peopleOf(db: D1Database, userkeys: string[]): Promise<Map<string, PersonRow>> {
	if (userkeys.length === 0) return new Map();
	const result = await db
		.prepare(
			`SELECT o.userkey, o.email, o.name, p.userkey AS referrer_userkey, p.email AS referrer_email, p.name AS referrer_name
			 FROM users o LEFT JOIN users p ON p.userid = o.referrer_userid WHERE o.userkey IN (SELECT value FROM json_each(?))`,
		)
		.bind(JSON.stringify([...new Set(userkeys)]))
		.all();
	return new Map(rowsOf<PersonRow>(result).map((p) => [p.userkey, p]));
}

/** One shard's first `f.limit` rewards of the filter, newest first (rewards_app_status, rewards_app or rewards_user). */
async function shardRewards(db: D1Database, f: RewardFilter): Promise<ShardReward[]> {
	const { where, args } = rewardFilterSql(f);
	const result = await db
		.prepare(`SELECT ${REWARD_COLUMNS} FROM rewards r WHERE ${where} ORDER BY r.created_at DESC, r.rewarddtlid DESC LIMIT ?`)
		.bind(...args, f.limit)
		.all();
	return rowsOf<ShardReward>(result);
}

/** Rewards of the app matching the filter, newest first, wherever its layout keeps them. */
export async function listAppRewards(env: ShardedEnv, f: RewardFilter): Promise<ProjectedRewardRow[]> {
	if ((await appLayout(env.DB, f.appid)) === "one") return listRewards(env.DB, f);
	const pool = await shardPool(env);
	const owner = f.userkey ?? (f.rewarddtlid ? userkeyOfRewardId(f.rewarddtlid) : null);
	const perShard =
		owner !== null ? [await shardRewards(pool.for(f.appid, owner), f)] : await onEveryShard(pool, (db) => shardRewards(db, f));
	const rows = perShard
		.flat()
		.sort((a, b) => compareKeys([b.created_at, b.rewarddtlid], [a.created_at, a.rewarddtlid]))
		.slice(0, f.limit);
	const people = await peopleOf(
		env.DB,
		rows.flatMap((r) => (r.friend_userkey ? [r.userkey, r.friend_userkey] : [r.userkey])),
	);
	return rows.map((r) => {
		const owner = people.get(r.userkey);
		const friend = r.friend_userkey ? people.get(r.friend_userkey) : undefined;
		return {
			...r,
			owner_email: owner?.email ?? null,
			owner_name: owner?.name ?? null,
			owner_referrer_userkey: owner?.referrer_userkey ?? null,
			owner_referrer_email: owner?.referrer_email ?? null,
			owner_referrer_name: owner?.referrer_name ?? null,
			friend_email: friend?.email ?? null,
			friend_name: friend?.name ?? null,
		};
	});
}
