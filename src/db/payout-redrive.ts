import { onEveryShard } from "./fanout";
import type { ShardPool } from "./shards";

type OpenPayoutOwner = { appid: string; userkey: string };

/** One database's owners of open payouts not moved since `before`, oldest first (rewards_payout_open: bounded). */
async function ownersIn(db: D1Database, before: string, limit: number): Promise<OpenPayoutOwner[]> {
	const result = await db
		.prepare(
			`SELECT DISTINCT appid, userkey FROM rewards
			 WHERE payout_state IN ('pending', 'due', 'sending', 'unknown') AND updated_at <= ? ORDER BY updated_at LIMIT ?`,
		)
		.bind(before, limit)
		.all<OpenPayoutOwner>();
	return result.results;
}

/**
 * The users whose Stripe payouts are open (due, sending or unknown; `pending` from
 * before the payout records) and whose reward projection has not moved since
 * `before` (ISO): the scheduled job re-drives them from their ledger
 * (src/integrations/stripe/sweep.ts). Bounded, on the partial index
 * `rewards_payout_open` (migrations 0018, 0044), in the control database and,
 * with `pool`, in every shard (issue 50 phase 2b-1: a sharded app's rewards),
 * each database's oldest first, taken in turn so no database starves the
 * others, at most `limit` in all.
 */
export async function usersWithOpenPayouts(
	db: D1Database,
	before: string,
	limit: number,
	pool: ShardPool | null = null,
): Promise<OpenPayoutOwner[]> {
	const [own, shards] = await Promise.all([
		ownersIn(db, before, limit),
		pool ? onEveryShard(pool, (shard) => ownersIn(shard, before, limit)) : Promise.resolve([]),
	]);
	const lists = [own, ...shards];
	const taken: OpenPayoutOwner[] = [];
	for (let i = 0; taken.length < limit && lists.some((l) => i < l.length); i++)
		for (const list of lists) {
			const owner = list[i];
			if (owner && taken.length < limit) taken.push(owner);
		}
	return taken;
}
