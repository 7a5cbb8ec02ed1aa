import type { LedgerError } from "./types";

/** Thrown inside a ledger transaction to roll it back with an expected failure (it becomes a LedgerResult error). */
export class Refused extends Error {
	constructor(readonly error: LedgerError) {
		super(error.message);
	}
}
