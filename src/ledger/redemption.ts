import { fromHundredths } from "../rewards/money";
import { restOf } from "./clawbacks";
import { assertUnlocked } from "./locks";
import { rewardRow, rewardRowById, settleAllOwed, updateReward } from "./mutations";
import { refuseIfErased } from "./privacy";
import { filterClause } from "./reads";
import { allocateOldestFirst, available } from "./redeem";
import { withIdempotencyKey } from "./redemption-keys";
import { Refused } from "./refused";
import { toLedgerReward } from "./rows";
import type { RewardRow } from "./schema";
import { redemptionSchema } from "./stored-json";
import type { TxContext } from "./transaction-types";
import type { LedgerIdempotency, LedgerReward, RedeemByAmount, Redemption } from "./types";

/**
 * Redemptions applied to the ledger, inside the caller's transaction: by
 * amount (split over the approved wallet rewards by redeem.ts) or by reward
 * ids. Each runs once per Idempotency-Key (redemption-keys.ts) and pays off
 * what is owed before anything is spent.
 */

/**
 * Redeems `amount` (hundredths, > 0) from the user's approved wallet
 * rewards, oldest first, the last one in part when needed; more than is
 * available is refused whole.
 */
export function redeemAmount(tx: TxContext, request: RedeemByAmount, amount: number): Redemption {
	refuseIfErased(tx.sql);
	return withIdempotencyKey(tx, request.idempotency, redemptionSchema, () => {
		// What is owed is paid off before anything is spent (normally already done when the debt or the credit arrived).
		settleAllOwed(tx);
		const filter = filterClause(request);
		const where = ["status = 'Approved'", "rewardtype = 'InstoreCredits'", "amount - reversed - redeemed - settled > 0", ...filter.where];
		const args = filter.args;
		if (request.rewardunit === undefined) {
			// Never add dollars to points: with several units under the filters, the caller must say which.
			const units = tx.sql
				.exec<{ rewardunit: string }>(`SELECT DISTINCT rewardunit FROM rewards WHERE ${where.join(" AND ")} ORDER BY rewardunit`, ...args)
				.toArray()
				.map((r) => r.rewardunit);
			if (units.length > 1) {
				throw new Refused({ code: "rewardunit_required", rewardunits: units, message: "the approved rewards span several units" });
			}
		}
		// Read oldest first only until the amount is covered (through the rewards_wallet index), so a
		// redemption costs what it takes, not the user's whole history; a refusal still reads them all.
		const candidates: { seq: number; remaining: number }[] = [];
		let covered = 0;
		for (const row of tx.sql.exec<{ seq: number; remaining: number }>(
			`SELECT seq, amount - reversed - redeemed - settled AS remaining FROM rewards WHERE ${where.join(" AND ")} ORDER BY seq`,
			...args,
		)) {
			candidates.push(row);
			covered += row.remaining;
			if (covered >= amount) break;
		}
		const allocations = allocateOldestFirst(candidates, amount);
		if (!allocations) {
			const approved = fromHundredths(available(candidates));
			throw new Refused({ code: "insufficient_balance", approved, message: `only ${approved} is available to redeem` });
		}
		for (const { seq } of allocations) assertUnlocked(tx.sql, tx.userkey, seq);
		const rewards = allocations.map(({ seq, take }) => redeemOne(tx, rewardRow(tx.sql, seq)!, take));
		return { redeemed: fromHundredths(amount), rewards };
	});
}

/** Redeems the whole remaining amount of each reward; all must be this user's approved wallet rewards, else none is redeemed. */
export function redeemRewards(tx: TxContext, ids: string[], idempotency?: LedgerIdempotency): Redemption {
	refuseIfErased(tx.sql);
	return withIdempotencyKey(tx, idempotency, redemptionSchema, () => {
		settleAllOwed(tx);
		let total = 0;
		const rewards: LedgerReward[] = [];
		for (const id of new Set(ids)) {
			const row = rewardRowById(tx.sql, tx.userkey, id);
			if (!row) throw new Refused({ code: "reward_not_found", rewarddtlid: id, message: "no such reward" });
			assertUnlocked(tx.sql, tx.userkey, row.seq);
			if (row.rewardtype === "Stripe") {
				// Paid into the customer's Stripe balance by the service itself (payouts.ts): never redeemed by the product.
				throw new Refused({
					code: "not_wallet_distribution",
					rewarddtlid: id,
					message: "Stripe rewards are paid into Stripe, not redeemed",
				});
			}
			if (row.rewardtype !== "InstoreCredits" || row.status !== "Approved" || restOf(row) <= 0) {
				throw new Refused({
					code: "reward_not_redeemable",
					rewarddtlid: id,
					message: row.rewardtype !== "InstoreCredits" ? `${row.rewardtype} rewards are not redeemed here` : `reward is ${row.status}`,
				});
			}
			total += restOf(row);
			rewards.push(redeemOne(tx, row, restOf(row)));
		}
		return { redeemed: fromHundredths(total), rewards };
	});
}

function redeemOne(tx: TxContext, before: RewardRow, take: number): LedgerReward {
	const redeemed = before.redeemed + take;
	const full = take === restOf(before);
	const after = updateReward(
		tx,
		before,
		full ? { redeemed, status: "Rewarded", rewarded_at: new Date(tx.nowMs).toISOString(), hold_until: null } : { redeemed },
		{ type: "reward.redeemed", extra: { redeemedamount: fromHundredths(take) } },
	);
	return toLedgerReward(tx.userkey, after);
}
