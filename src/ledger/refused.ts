import type { LedgerError, LedgerResult, StatusChange } from "./types";

/** Thrown inside a ledger transaction to roll it back with an expected failure (it becomes a LedgerResult error). */
export class Refused extends Error {
	constructor(readonly error: LedgerError) {
		super(error.message);
	}
}

/** What a ledger without tables answers to a change of rewards: none of them is here. */
export function noSuchRewards(changes: StatusChange[]): LedgerResult<never> {
	return { ok: false, error: { code: "reward_not_found", rewarddtlid: changes[0]?.rewarddtlid ?? "", message: "no such reward" } };
}
