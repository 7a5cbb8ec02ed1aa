import { z } from "zod";

/**
 * Stripe disputes (migration 0042, docs/stripe.md "Disputes"): where each
 * stands. The state only moves forward, `open` to `won` or `lost`, and a
 * closed dispute stays as it closed: so however its events arrive (a close
 * before its open, twice, at once), every reader converges on the same state.
 */

export type DisputeState = "open" | "won" | "lost";
const stateRow = z.object({ state: z.enum(["open", "won", "lost"]) });

/**
 * Records what an event says of the dispute (`open` for `charge.dispute.created`,
 * the outcome for `charge.dispute.closed`) and answers where it stands now:
 * an open becomes closed, nothing else changes (one round trip).
 */
export async function recordDisputeState(
	db: D1Database,
	appid: string,
	dispute: string,
	customid: string,
	state: DisputeState,
	now: number,
): Promise<DisputeState> {
	const [, row] = await db.batch([
		db
			.prepare(
				`INSERT INTO stripe_disputes (appid, dispute, customid, state, updated_at) VALUES (?, ?, ?, ?, ?)
				 ON CONFLICT (appid, dispute) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
				 WHERE stripe_disputes.state = 'open' AND excluded.state <> 'open'`,
			)
			.bind(appid, dispute, customid, state, now),
		db.prepare("SELECT state FROM stripe_disputes WHERE appid = ? AND dispute = ?").bind(appid, dispute),
	]);
	return stateRow.parse(row?.results[0]).state;
}

/** Where the dispute stands (the primary key), or null when no event of it was recorded. */
export async function disputeState(db: D1Database, appid: string, dispute: string): Promise<DisputeState | null> {
	const row = await db.prepare("SELECT state FROM stripe_disputes WHERE appid = ? AND dispute = ?").bind(appid, dispute).first();
	return row ? stateRow.parse(row).state : null;
}
