import type { z } from "zod";
import { runAcrossLedgers } from "../coordination/ledger-transaction";
import { userkeyOfRewardId } from "../domain/ledger-ids";
import type { WorkOutcome } from "../domain/outcome";
import { ledgerError, rewardNotFound } from "../http/errors";
import type { LedgerAudit } from "../ledger/audit";
import type { StatusChange } from "../ledger/types";
import type { statusChangesSchema } from "./schemas";
import { failureOf, outcomeOf } from "./work";

/**
 * The reward status change that operation 9 (changerewardstatus) and the
 * admin API share. Registers no operation, so admin code may import it.
 */

/** Groups changes by the ledger that owns each reward; an id that names no ledger is unknown. */
function byLedger(changes: StatusChange[]): Map<string, StatusChange[]> {
	const groups = new Map<string, StatusChange[]>();
	for (const change of changes) {
		const userkey = userkeyOfRewardId(change.rewarddtlid);
		if (!userkey) throw rewardNotFound();
		groups.set(userkey, [...(groups.get(userkey) ?? []), change]);
	}
	return groups;
}

/**
 * Operation 9: every entry or none, answered as a typed outcome
 * (domain/outcome.ts; `applied` with the number of entries; a reward another
 * change holds is `retry_later`). Within one user's ledger the change is
 * one transaction; across users it is a prepare/commit between the ledgers
 * concerned (coordination/ledger-transaction.ts), so a redemption running at
 * the same moment can never leave it half applied.
 */
export async function changeRewardStatuses(
	env: Env,
	appid: string,
	entries: z.output<typeof statusChangesSchema>,
	audit: LedgerAudit,
): Promise<WorkOutcome<number>> {
	return outcomeOf(async () => {
		const changes = entries.map((e) => ({ rewarddtlid: e.rewarddtlid, status: e.rewardstatus, message: e.message ?? null }));
		const parts = [...byLedger(changes)].map(([userkey, list]) => ({
			userkey,
			operation: { kind: "status" as const, changes: list, audit },
		}));
		const result = await runAcrossLedgers(env, appid, parts);
		if (!result.ok) return failureOf(ledgerError(result.error));
		return { kind: "applied", value: changes.length };
	});
}
