/**
 * The pure parts of a ledger's point-in-time restore (restore.ts, docs/deploy.md
 * "The ledgers' storage"): which times can be asked for, and the version epoch
 * that lets a restored ledger's older rows overwrite D1's newer projection.
 */

/** Cloudflare keeps 30 days of point-in-time recovery for each SQLite-backed Durable Object. */
export const PITR_WINDOW_MS = 30 * 86_400_000;

/** Where to restore a ledger to: a time within the window, or a bookmark (the undo bookmark a restore answered). */
export type RestoreTarget = { at: string } | { bookmark: string };

/**
 * Why `atMs` cannot be restored to at `nowMs`, or null when it can: not in the
 * future, and not older than the platform keeps (a minute's margin, so a time
 * at the window's very edge is not refused by the platform a moment later).
 */
export function restoreTimeError(atMs: number, nowMs: number): string | null {
	if (!Number.isFinite(atMs)) return "an ISO 8601 time, e.g. 2026-11-29T08:00:00Z";
	if (atMs > nowMs) return "a time in the past, not in the future";
	if (atMs < nowMs - PITR_WINDOW_MS + 60_000) return "a time within the last 30 days (point-in-time recovery keeps no more)";
	return null;
}

/**
 * The restore epoch: the version every reward of a restored ledger is set to,
 * so each restored row is newer than anything D1's projection holds or a
 * message still in the projection queue carries (db/projection.ts keeps only
 * a higher version). Those versions came from the ledger before the restore,
 * at most `formerMaxVersion` when it was measured; a write that slipped in
 * after the measurement raises a version by one per write, and epoch ms
 * dominate that (and any earlier restore's epoch, taken at an earlier ms).
 * It is above the restored rows' own versions (`restoredMaxVersion`) too, so
 * every reward's version still only grows.
 */
export function restoreEpoch(nowMs: number, formerMaxVersion: number, restoredMaxVersion: number): number {
	return Math.max(Math.floor(nowMs), formerMaxVersion + 1, restoredMaxVersion + 1);
}

/**
 * The reward numbers the ledger held before the restore and the restored one
 * does not (granted after the restore time): D1 still shows them and the
 * product may know their ids, so they are marked in D1 and never reused by the
 * ledger (the seq floor). Null when there are none.
 */
export function forgottenSeqs(restoredMaxSeq: number, formerMaxSeq: number): { from: number; to: number } | null {
	return formerMaxSeq > restoredMaxSeq ? { from: restoredMaxSeq + 1, to: formerMaxSeq } : null;
}

/** Whether the platform's error says the runtime has no point-in-time recovery (local workerd: "does not implement"). */
export const pitrUnavailable = (message: string) =>
	/does not implement point-in-time recovery|not (?:supported|implemented)/i.test(message);
