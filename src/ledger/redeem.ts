/** A reward that can give to a redemption, in hundredths. */
export interface RedeemCandidate {
	seq: number;
	remaining: number;
}

export interface Allocation {
	seq: number;
	take: number;
}

/**
 * Splits `amount` (hundredths, > 0) over `candidates`, oldest (lowest seq)
 * first, taking part of the last reward when needed. Returns null when the
 * candidates hold less than `amount`: a redemption is refused whole, never
 * paid in part.
 */
export function allocateOldestFirst(candidates: readonly RedeemCandidate[], amount: number): Allocation[] | null {
	const ordered = [...candidates].filter((c) => c.remaining > 0).sort((a, b) => a.seq - b.seq);
	const allocations: Allocation[] = [];
	let left = amount;
	for (const c of ordered) {
		if (left <= 0) break;
		const take = Math.min(c.remaining, left);
		allocations.push({ seq: c.seq, take });
		left -= take;
	}
	return left > 0 ? null : allocations;
}

/** Sum of what the candidates can still give, in hundredths. */
export function available(candidates: readonly RedeemCandidate[]): number {
	return candidates.reduce((sum, c) => sum + Math.max(0, c.remaining), 0);
}
