/**
 * The users whose Stripe payouts are open (due, sending or unknown; `pending` from
 * before the payout records) and whose reward projection has not moved since
 * `before` (ISO): the scheduled job re-drives them from their ledger
 * (src/integrations/stripe/sweep.ts). Bounded, on the partial index
 * `rewards_payout_open` (migrations 0018, 0044).
 */
export async function usersWithOpenPayouts(db: D1Database, before: string, limit: number): Promise<{ appid: string; userkey: string }[]> {
	const result = await db
		.prepare(
			`SELECT DISTINCT appid, userkey FROM rewards
			 WHERE payout_state IN ('pending', 'due', 'sending', 'unknown') AND updated_at <= ? ORDER BY updated_at LIMIT ?`,
		)
		.bind(before, limit)
		.all<{ appid: string; userkey: string }>();
	return result.results;
}
