import { rowsTargetOf } from "../db/app-layout";
import { appTimeZone } from "../db/leaderboard";
import { needsZone, type ProjectionMessage, writeProjectionBatch, writeShardRows } from "../db/projection-batch";
import { errorText, type FlushHost, NEXT_OUTBOX_ID, payloadOf, postpone, remove } from "./outbox-entries";
import { partSchema, projectedRow } from "./projection-message";
import type { LedgerOutboxEntry, RewardRow } from "./schema";
import { projectionPayloadSchema, readLedgerJson } from "./stored-json";

/**
 * A conversion's referrer's records kept in its friend's outbox (issue 49,
 * docs/scaling.md "The referrer's acknowledgement"). The referrer's ledger
 * grants without queuing its new rewards' projection: it hands their records
 * back (`handBack`, grant.ts), and the friend's ledger writes them in its own
 * grant's transaction, inside the projection entry of the reward that carries
 * the event's `conversion.recorded` (one row for both), or, when its grant
 * creates no reward, as an entry of its own (`carried`). The friend's flush
 * sends them in its message (`also`), the consumer writes them with it and
 * acknowledges them to the friend's ledger only: the referrer writes no
 * outbox entry and receives no acknowledgement (a call, a write transaction
 * and an alarm write less per conversion).
 *
 * The hole this leaves, and what closes it: a referrer's grant that committed
 * while the friend's transaction did not (a crash, an eviction, an exception)
 * has its records nowhere. The event then has no row in D1 (that row is
 * written by the friend's projection of the same transaction), so its gate
 * keeps it pending and the completion pass re-drives it, as a client's repeat
 * does; the referrer's grant, finding its rewards by key, hands their records
 * back again (as stored now), and the friend writes them this time. A record
 * written twice, or after a newer one, changes nothing (the projection's
 * version guard). Every later change of the reward (status, refund, code,
 * payout) is queued in the referrer's own outbox as before.
 */

/** The part of `rows` (this ledger's rewards) handed to another ledger's outbox, stamped `nowMs`. */
export function recordsPart(appid: string, userkey: string, rows: RewardRow[], nowMs: number): ProjectionMessage {
	const rewards = rows.map((row) => ({ id: 0, ref: `projection:${row.seq}`, row: projectedRow(row) }));
	return { projection: 1, appid, userkey, sentAt: nowMs, rewards, webhooks: [], audits: [] };
}

/**
 * Keeps another ledger's part in an entry of its own, for a grant that created no reward to carry it. Keyed by
 * the part's ledger and rewards: the same records handed again (a repeat) while the first are waiting add nothing.
 */
export function queueCarried(sql: SqlStorage, part: ProjectionMessage, nowMs: number): void {
	sql.exec(
		`INSERT INTO outbox (id, kind, ref, payload, next_attempt_at, created_at) VALUES (${NEXT_OUTBOX_ID}, 'carried', ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		`carried:${part.userkey}:${part.rewards.map((r) => r.row.seq).join(",")}`,
		JSON.stringify(part),
		nowMs,
		new Date(nowMs).toISOString(),
	);
}

/** Whether an outbox entry is another ledger's part kept here (queueCarried). */
export const isCarriedEntry = (entry: LedgerOutboxEntry) => entry.kind === "carried";

/**
 * The other ledger's part an entry keeps, as this ledger sends it: marked with this ledger as its carrier, so the
 * consumer acknowledges it here (and an entry of its own by its id and ref); undefined when it keeps none.
 */
export function carriedPartOf(host: FlushHost, entry: LedgerOutboxEntry): ProjectionMessage | undefined {
	if (isCarriedEntry(entry)) {
		const part = readLedgerJson("outbox", "payload", entry.payload, partSchema);
		return { ...part, carrier: { userkey: host.userkey, id: entry.id, ref: entry.ref } };
	}
	if (entry.kind !== "projection") return undefined;
	const { carried } = payloadOf(entry, projectionPayloadSchema);
	if (carried === undefined) return undefined;
	return { ...partSchema.parse(carried), carrier: { userkey: host.userkey } };
}

/**
 * An explicit flush's parts (outbox.ts deliverRecords: D1 written when it returns): the parts `entries` keep are
 * written to D1 in one batch before the entries that keep them may go; the entries of their own then go. When D1
 * refuses, the pass's entries (`entries` and `others`) are postponed and the answer is false.
 */
export async function writeCarried(host: FlushHost, entries: LedgerOutboxEntry[], others: LedgerOutboxEntry[]): Promise<boolean> {
	const parts = entries.flatMap((e) => carriedPartOf(host, e) ?? []);
	if (parts.length === 0) return true;
	try {
		const zones = new Map<string, string>();
		if (parts.some(needsZone)) zones.set(host.appid, await appTimeZone(host.env.DB, host.appid));
		// Each part's rows go where its OWNER's rows live (issue 50 phase 2b-1): a sharded app's referrer's rows to the
		// referrer's shard, not this ledger's, and not to the control database (db/app-layout.ts, rowsTargetOf).
		const here: ProjectionMessage[] = [];
		const elsewhere = new Map<D1Database, ProjectionMessage[]>();
		for (const part of parts) {
			const target = await rowsTargetOf(host.env, part.appid, part.userkey);
			if (target.elsewhere) elsewhere.set(target.db, [...(elsewhere.get(target.db) ?? []), part]);
			else here.push(part);
		}
		await Promise.all([...elsewhere].map(([shard, own]) => writeShardRows(shard, own, zones)));
		if (here.length > 0) await writeProjectionBatch(host.env.DB, here, zones, new Date().toISOString());
	} catch (error) {
		console.warn("ledger outbox: D1 write failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, [...entries, ...others], error);
		return false;
	}
	remove(host, entries.filter(isCarriedEntry));
	return true;
}
