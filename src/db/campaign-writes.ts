/**
 * How many writes to campaigns or their rules this isolate has made: the
 * campaign cache (campaign-cache.ts) empties itself when the count moved, so
 * an edit applies at once where it was made. A counter of its own, so the
 * writers (campaigns.ts, campaign-archive.ts, messages.ts) need not import
 * the cache, which reads their types.
 */
let writes = 0;

/** Called by every write to a campaign or its rules. */
export function campaignsChanged(): void {
	writes++;
}

/** The writes made so far in this isolate. */
export function campaignWrites(): number {
	return writes;
}
