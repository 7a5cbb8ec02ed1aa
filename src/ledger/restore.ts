import { queueProjection } from "./outbox";
import { erasedAt, erasePersonInLedger } from "./privacy";
import { forgottenSeqs, pitrUnavailable, type RestoreTarget, restoreEpoch } from "./restore-plan";
import type { LedgerWriter } from "./writer";

/**
 * A ledger's point-in-time restore (issue 51; docs/deploy.md "The ledgers'
 * storage"), in two calls of UserLedger.restoreLedger, made one after the other
 * by the admin route (admin/ledger-restore.ts):
 *
 * 1. `restore`: asks the platform for the bookmark of the time (or takes the
 *    bookmark given), tells the storage to restore to it on its next start
 *    (which answers the bookmark of the storage as it is now: the undo), reads
 *    how far the ledger's reward numbers and versions had gone, and aborts the
 *    object after answering, so it starts again restored.
 * 2. `resync`, on the restored object: every reward's version is raised to the
 *    restore epoch (restore-plan.ts) and its projection queued, the friends
 *    erased since are erased again, the numbers of forgotten rewards are kept
 *    from reuse (the seq floor, read by mutations.ts insertReward), and the
 *    outbox is flushed straight to D1, so D1 shows the restored rewards when
 *    it returns.
 *
 * An erased user's ledger is refused, never restored: erasure is final
 * (docs/fraud.md), and a restore to before it would bring back what was erased.
 */

/** Step 1's answer: where the ledger goes, the bookmark that undoes it, and what the ledger held before. */
export interface RestoreStarted {
	/** The bookmark the storage restores to on its next start. */
	restoredto: string;
	/** The bookmark of the storage just before the restore: restore to it to undo this restore. */
	undobookmark: string;
	/** The highest reward number and version before the restore (0 for a ledger without tables). */
	formermaxseq: number;
	formermaxversion: number;
}

/** Step 2's answer: what the restored ledger holds and sent to D1. */
export interface RestoreResynced {
	/** Rewards of the restored ledger, each re-projected at its raised version. */
	rewards: number;
	epoch: number;
	/** Reward numbers the ledger held before and no longer has (granted after the restore time), or null. */
	forgotten: { from: number; to: number } | null;
	/** Friends erased since the restore time whose copies were erased again. */
	reerased: number;
}

export type RestoreFailure = {
	ok: false;
	code: "restore_unavailable" | "user_erased" | "invalid_target" | "restore_pending" | "restore_past_payout";
	message: string;
};
export type RestoreStep =
	| { step: "restore"; target: RestoreTarget }
	| { step: "resync"; formermaxseq: number; formermaxversion: number; erasedfriends: string[] };
export type RestoreAnswer = ({ ok: true } & (RestoreStarted | RestoreResynced)) | RestoreFailure;

/**
 * The storages told to restore on their next start, until the object aborts: a resync that reaches the object
 * before its abort would run on the storage about to be replaced, so it is refused (restore_pending) and retried.
 * Keyed by the storage object, which a restarted object gets anew.
 */
const pending = new WeakSet<DurableObjectStorage>();

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Step 1 (see above). `abort` restarts the object; it runs after the answer has left. */
export async function startRestore(
	storage: DurableObjectStorage,
	writer: LedgerWriter,
	target: RestoreTarget,
	abort: () => void,
): Promise<({ ok: true } & RestoreStarted) | RestoreFailure> {
	if (writer.hasSchema() && erasedAt(writer.sql) !== null) {
		return { ok: false, code: "user_erased", message: "an erased user's ledger is never restored: erasure is final" };
	}
	// Money that left cannot be restored: a payout record restored as unpaid would be sent again, and Stripe's
	// Idempotency-Key dedupes it for 24 hours only (payout-outcome.ts). Only a time can be checked: an undo's
	// bookmark is the storage just before a restore, which holds every payout made until then.
	if ("at" in target && writer.hasSchema()) {
		const sent = writer.sql
			.exec<{ n: number }>("SELECT COUNT(*) AS n FROM payouts WHERE state IN ('sending', 'paid') AND sent_at >= ?", Date.parse(target.at))
			.one().n;
		if (sent > 0) {
			return {
				ok: false,
				code: "restore_past_payout",
				message: `${sent} Stripe payout(s) of this user were sent at or after that time; a restore to before them could pay them again`,
			};
		}
	}
	// Present in today's runtime types; absent from an older runtime, and answering "does not implement" under local workerd.
	if (typeof storage.getBookmarkForTime !== "function" || typeof storage.onNextSessionRestoreBookmark !== "function") {
		return { ok: false, code: "restore_unavailable", message: "this runtime has no Durable Objects point-in-time recovery API" };
	}
	const before = maxima(writer);
	let restoredto: string;
	let undobookmark: string;
	try {
		restoredto = "at" in target ? await storage.getBookmarkForTime(Date.parse(target.at)) : target.bookmark;
		undobookmark = await storage.onNextSessionRestoreBookmark(restoredto);
	} catch (error) {
		const message = errorText(error);
		if (pitrUnavailable(message)) return { ok: false, code: "restore_unavailable", message };
		return { ok: false, code: "invalid_target", message };
	}
	// How far the ledger has gone, read again after the awaits (a call may have written meanwhile), in the same
	// synchronous step as the pending mark. A write in the last moment before the abort is covered by the epoch
	// (restore-plan.ts); a reward granted in it would be neither marked in D1 nor kept from reuse (see docs/deploy.md).
	const after = maxima(writer);
	pending.add(storage);
	// After this call has answered: an abort now would fail the call, and its answer (the undo bookmark) would be lost.
	setTimeout(abort, 0);
	return {
		ok: true,
		restoredto,
		undobookmark,
		formermaxseq: Math.max(before.seq, after.seq),
		formermaxversion: Math.max(before.version, after.version),
	};
}

/** The highest reward number and version of the ledger (0 without tables): MAX(seq) is the rowid's last, the version a scan of one user's rewards. */
function maxima(writer: LedgerWriter): { seq: number; version: number } {
	if (!writer.hasSchema()) return { seq: 0, version: 0 };
	return writer.sql
		.exec<{ seq: number; version: number }>("SELECT COALESCE(MAX(seq), 0) AS seq, COALESCE(MAX(version), 0) AS version FROM rewards")
		.one();
}

/** Step 2 (see above), on the restarted, restored object. Can run twice: each run takes a new epoch and re-sends. */
export function resyncAfterRestore(
	storage: DurableObjectStorage,
	writer: LedgerWriter,
	step: { formermaxseq: number; formermaxversion: number; erasedfriends: string[] },
	nowMs: number,
): ({ ok: true } & RestoreResynced) | RestoreFailure {
	if (pending.has(storage)) return { ok: false, code: "restore_pending", message: "the ledger has not restarted restored yet" };
	// A restore to before the ledger's first write leaves no tables; the seq floor needs them when rewards are forgotten.
	if (!writer.hasSchema() && step.formermaxseq === 0) return { ok: true, rewards: 0, epoch: 0, forgotten: null, reerased: 0 };
	const resynced = writer.transactionSync((): RestoreResynced => {
		const sql = writer.sql;
		const restored = maxima(writer);
		const epoch = restoreEpoch(nowMs, step.formermaxversion, restored.version);
		// Every reward of the user, once (bounded by the user's own rewards, as an export is), set to the epoch, not
		// raised by it: above its own version and all D1 holds, and a ledger restored many times stays far from 2^53.
		const raised = sql.exec<{ seq: number; version: number }>("UPDATE rewards SET version = ? RETURNING seq, version", epoch).toArray();
		for (const row of raised) queueProjection(sql, row.seq, row.version, nowMs);
		let reerased = 0;
		for (const friend of step.erasedfriends) reerased += erasePersonInLedger(sql, friend, [], null).rewards;
		// The friends as restored are behind D1 (attributions, conversions, profile changes, erasures since): they go,
		// and the next read fills them from D1 again (issue 49 piece 4, friends-fill.ts). Once per restore, bounded by them.
		sql.exec("DELETE FROM friends");
		sql.exec("DELETE FROM meta WHERE key = 'friends'");
		const forgotten = forgottenSeqs(restored.seq, step.formermaxseq);
		if (forgotten) {
			sql.exec(
				`INSERT INTO meta (key, value) VALUES ('seq_floor', ?)
				 ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`,
				String(forgotten.to),
			);
		}
		return { rewards: raised.length, epoch, forgotten, reerased };
	});
	return { ok: true, ...resynced };
}

/**
 * One step of a restore as UserLedger.restoreLedger runs it: `restore` sets the storage and aborts the object
 * (`abort`); `resync` sends the restored ledger to D1 again, then flushes straight to D1 (`flush`), so the route's
 * answer sees D1 in line; if D1 fails now, the alarm delivers the entries later.
 */
export async function runRestoreStep(
	storage: DurableObjectStorage,
	writer: LedgerWriter,
	step: RestoreStep,
	object: { abort: () => void; flush: () => Promise<unknown> },
): Promise<RestoreAnswer> {
	if (step.step === "restore") return startRestore(storage, writer, step.target, object.abort);
	const resynced = resyncAfterRestore(storage, writer, step, Date.now());
	if (resynced.ok && writer.hasSchema()) await object.flush().catch((error) => console.error("ledger flush after a restore failed", error));
	return resynced;
}
