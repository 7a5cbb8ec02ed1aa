import type { z } from "zod";
import type { AssignedCoupon } from "../db/projection";
import type { ProjectionMessage } from "../db/projection-batch";
import type { InFlight } from "./in-flight";
import type { LedgerOutboxEntry } from "./schema";
import { readLedgerJson } from "./stored-json";
import type { CouponClaim } from "./transaction-types";

/**
 * The ledger outbox's entries as the flush handles them (outbox.ts and
 * records-queued.ts): what a flush needs from its ledger, and how an entry
 * is postponed after a failure or removed once delivered.
 */

/**
 * The id of a new outbox entry: one more than the largest present (ledger
 * schema step 11). The outbox is keyed by its ref alone, so an entry writes
 * one row; ids only order the entries present (coupon claims before their
 * releases), and the table holds only what is not yet delivered, so the
 * read is of a few rows.
 */
export const NEXT_OUTBOX_ID = "(SELECT COALESCE(MAX(id), 0) + 1 FROM outbox)";

/**
 * Delay before retry number `attempts` (1-based) of a failed delivery:
 * 5 s, 15 s, 45 s, ... capped at one hour. Entries are never dropped, since
 * each one stands for a change that was already acknowledged.
 */
export function backoffMs(attempts: number): number {
	return Math.min(5_000 * 3 ** Math.max(0, attempts - 1), 60 * 60 * 1000);
}

/** What the flush needs from its ledger. */
export interface FlushHost {
	sql: SqlStorage;
	transactionSync<T>(fn: () => T): T;
	env: Env;
	appid: string;
	userkey: string;
	/** Writes a claimed code onto the reward (in its own transaction) and removes the claim entry. */
	assignCoupon(entry: LedgerOutboxEntry, claim: CouponClaim, coupon: AssignedCoupon): void;
	/**
	 * Records go to the projection queue (records-queued.ts: many ledgers share
	 * one D1 batch) instead of straight to D1. Off for an explicit flush
	 * (`UserLedger.flush`: the admin's review queue, an erasure, tests), which
	 * must find D1 written when it returns.
	 */
	queued?: boolean;
	/**
	 * Every record is due now, also those held for the projection queue's
	 * acknowledgement or waiting for a retry: an explicit flush, which must
	 * find D1 written when it returns.
	 */
	allRecords?: boolean;
	/**
	 * The entries sent to the projection queue and waiting for its
	 * acknowledgement, held in the object's memory (in-flight.ts); none for a
	 * flush that does not send to the queue.
	 */
	inFlight?: InFlight;
	/**
	 * Other ledgers' records handed to this one to ride in its next message
	 * (records-queued.ts, takeRecords), taken once: a conversion's referrer's.
	 */
	takeCarried?: () => ProjectionMessage[];
}

/** An entry's payload, checked against the shape its kind is written with. */
export const payloadOf = <S extends z.ZodType>(entry: LedgerOutboxEntry, schema: S): z.output<S> =>
	readLedgerJson("outbox", "payload", entry.payload, schema);

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 500);

export function postpone(host: FlushHost, entries: LedgerOutboxEntry[], error: unknown, delayMs?: number): void {
	const now = Date.now();
	host.transactionSync(() => {
		for (const e of entries) {
			const attempts = e.attempts + 1;
			host.sql.exec(
				"UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ? AND ref = ?",
				attempts,
				now + (delayMs ?? backoffMs(attempts)),
				errorText(error),
				e.id,
				e.ref,
			);
		}
	});
}

export function remove(host: FlushHost, entries: LedgerOutboxEntry[]): void {
	if (entries.length > 0) host.transactionSync(() => deleteEntries(host.sql, entries));
}

/**
 * Deletes delivered entries in one statement, however many there are (each
 * statement costs about 0.08 ms of the object's CPU: bench/README.md, "Floors"). An
 * entry given with a version goes only while its version is at most that: a
 * change committed while its batch was in flight raised it, and it stays for
 * the next pass.
 */
export function deleteEntries(sql: SqlStorage, entries: LedgerOutboxEntry[], versions: ReadonlyMap<number, number> = new Map()): void {
	if (entries.length === 0) return;
	// By id and ref: an id may be used again once its entry is gone (schema step 9), so the id alone could name a newer entry.
	const triples = entries.map((e) => [e.id, e.ref, versions.get(e.id) ?? null]);
	sql.exec(
		`DELETE FROM outbox WHERE ref IN (SELECT o.ref FROM json_each(?) j JOIN outbox o ON o.ref = j.value ->> 1 AND o.id = j.value ->> 0
		 WHERE j.value ->> 2 IS NULL OR o.version <= j.value ->> 2)`,
		JSON.stringify(triples),
	);
}

/**
 * One entry a flush handed on, at the version it carried (null: an entry that does not change, a webhook or
 * audit), and for a projection entry the id of the event it carried with it (issue 33), if any.
 */
export interface SentEntry {
	id: number;
	ref: string;
	version: number | null;
	eventid?: string | null;
}

/** The event id a projection entry carries (outbox-queue.ts queueProjection), as SQL on the row `o`. */
const CARRIED = "(CASE WHEN o.kind = 'projection' THEN o.payload ->> '$.event.eventid' END)";

/**
 * Removes the entries the projection queue's consumer wrote to D1 (its
 * acknowledgement): each only while it is the same entry (`ref`) and, for a
 * reward, its version is at most the one written, since a change committed
 * while the message was in flight raised it and it must go again. A
 * projection entry that carries an event goes only when that event was
 * written too (`eventid`): one folded in after the send, or held back,
 * stays. An entry that stays at a newer version loses the event it carried
 * when that event was written, so the next send does not write it twice, and
 * so the other ledger's records that rode with it (carried-records.ts),
 * written in the same message.
 */
export function deleteAcked(sql: SqlStorage, acks: SentEntry[]): void {
	if (acks.length === 0) return;
	const json = JSON.stringify(acks.map((a) => [a.id, a.ref, a.version, a.eventid ?? null]));
	sql.exec(
		`DELETE FROM outbox WHERE ref IN (SELECT o.ref FROM json_each(?) j JOIN outbox o ON o.ref = j.value ->> 1 AND o.id = j.value ->> 0
		 WHERE (j.value ->> 2 IS NULL OR o.version <= j.value ->> 2) AND (${CARRIED} IS NULL OR ${CARRIED} = j.value ->> 3))`,
		json,
	);
	if (!acks.some((a) => a.eventid)) return;
	sql.exec(
		`UPDATE outbox SET payload = json_remove(payload, '$.event', '$.carried') WHERE ref IN (SELECT o.ref FROM json_each(?) j
		 JOIN outbox o ON o.ref = j.value ->> 1 AND o.id = j.value ->> 0 WHERE j.value ->> 3 IS NOT NULL AND ${CARRIED} = j.value ->> 3)`,
		json,
	);
}
