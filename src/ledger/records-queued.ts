import { auditEntrySchema } from "../db/audit";
import { type ProjectionMessage, partsOf } from "../db/projection-batch";
import { jsonBytes, packBatches } from "../outbox/queue-batches";
import { carriedPartOf, isCarriedEntry } from "./carried-records";
import { errorText, type FlushHost, payloadOf, postpone, remove, type SentEntry } from "./outbox-entries";
import { projectedRow } from "./projection-message";
import type { LedgerOutboxEntry, RewardRow } from "./schema";
import { projectionPayloadSchema, webhookEventSchema } from "./stored-json";

/**
 * The background flush's records (projection rows, webhook events, audit
 * entries) leave through the projection queue (issue 33): ONE message per
 * pass (more only past the Queues size limits), no D1 round trip here. The
 * queue's consumer (outbox/projection-consumer.ts) writes the messages of
 * many ledgers in one D1 batch, then acknowledges to each ledger what it
 * wrote (`UserLedger.projectionWritten`), and only then do the entries go.
 * Meanwhile they are held for IN_FLIGHT_MS (not sent again), in the object's
 * memory (in-flight.ts); a message lost or not acknowledged by then, or a
 * ledger evicted meanwhile, sends them again, which the version guard and
 * the event and entry keys make harmless.
 */

/** How long a sent entry waits for the consumer's acknowledgement before it is sent again. */
export const IN_FLIGHT_MS = 30_000;
/** A message's records stay under this many bytes (the platform takes 128 KB per message). */
const MESSAGE_BYTES = 96_000;

/** `part`: another ledger's records the entry keeps (carried-records.ts), sent in the same message as the entry. */
type Item =
	| { kind: "reward"; sent: SentEntry; value: ProjectionMessage["rewards"][number]; part?: ProjectionMessage }
	| { kind: "webhook"; sent: SentEntry; value: ProjectionMessage["webhooks"][number]; part?: undefined }
	| { kind: "audit"; sent: SentEntry; value: ProjectionMessage["audits"][number]; part?: undefined }
	| { kind: "part"; sent: SentEntry; value: null; part: ProjectionMessage };

/** An item's bytes in a message, the part it keeps included. */
const itemBytes = (item: Item) => jsonBytes(item.value) + (item.part ? jsonBytes(item.part) : 0);

/** The items of a pass, in messages under MESSAGE_BYTES each (a record alone over it still goes, alone). */
function messagesOf(host: FlushHost, items: Item[]): { message: ProjectionMessage; sent: SentEntry[] }[] {
	const sentAt = Date.now();
	const groups = packBatches(items, itemBytes).flatMap((batch) => {
		// packBatches cuts at the count and bytes of a sendBatch; a message's own limit is lower.
		const out: Item[][] = [];
		let current: Item[] = [];
		let bytes = 0;
		for (const item of batch) {
			const size = itemBytes(item);
			if (current.length > 0 && bytes + size > MESSAGE_BYTES) {
				out.push(current);
				current = [];
				bytes = 0;
			}
			current.push(item);
			bytes += size;
		}
		if (current.length > 0) out.push(current);
		return out;
	});
	return groups.map((group) => ({
		message: {
			projection: 1,
			appid: host.appid,
			userkey: host.userkey,
			sentAt,
			rewards: group.flatMap((i) => (i.kind === "reward" ? [i.value] : [])),
			webhooks: group.flatMap((i) => (i.kind === "webhook" ? [i.value] : [])),
			audits: group.flatMap((i) => (i.kind === "audit" ? [i.value] : [])),
			...(group.some((i) => i.part) ? { also: group.flatMap((i) => (i.part ? [i.part] : [])) } : {}),
		},
		sent: group.map((i) => i.sent),
	}));
}

/**
 * Other ledgers' parts ride in the first message while it stays under
 * MESSAGE_BYTES (issue 49: a conversion's two ledgers, one message); a part
 * that does not fit goes as a message of its own in the same send. The parts
 * are no entries of this ledger: a failed send leaves them to their own
 * ledger, which sends them again when their hold ends.
 */
function withCarried(
	messages: { message: ProjectionMessage; sent: SentEntry[] }[],
	carried: ProjectionMessage[],
): { message: ProjectionMessage; sent: SentEntry[] }[] {
	const first = messages[0];
	let bytes = first ? jsonBytes(first.message) : 0;
	for (const part of carried) {
		const size = jsonBytes(part);
		if (first && bytes + size <= MESSAGE_BYTES) {
			// A part's own parts (records another ledger keeps there, carried-records.ts) ride beside it: one level deep.
			first.message.also = [...(first.message.also ?? []), ...partsOf(part)];
			bytes += size;
		} else messages.push({ message: part, sent: [] });
	}
	return messages;
}

/**
 * The records of `entries` (read in the caller's synchronous step) taken for
 * another ledger's message (issue 49): a conversion's referrer hands them to
 * its friend's ledger, whose flush carries them in its own message, so a
 * conversion sends one message, not one per ledger. ONE part at most (what
 * does not fit waits for this ledger's own flush), stamped now, and held like
 * a send (in-flight.ts): if the carrier never sends it (its call failed, it
 * was evicted, its send failed), the hold ends and this ledger's alarm sends
 * the entries itself. Null when there is nothing to carry.
 */
export function takeRecords(host: FlushHost, entries: LedgerOutboxEntry[]): ProjectionMessage | null {
	const { items, gone } = itemsOf(
		host,
		entries.filter((e) => e.kind === "projection"),
		entries.filter((e) => e.kind === "webhook"),
		entries.filter((e) => e.kind === "audit"),
	);
	remove(host, gone);
	const first = items.length > 0 ? messagesOf(host, items)[0] : undefined;
	if (!first) return null;
	host.inFlight?.hold(first.sent, Date.now() + IN_FLIGHT_MS);
	return first.message;
}

/**
 * The entries as they are now: the pass read them before its awaits (coupon
 * claims, payouts), and meanwhile an erasure may have redacted a payload or
 * an acknowledgement removed an entry.
 */
function reread(sql: SqlStorage, entries: LedgerOutboxEntry[]): LedgerOutboxEntry[] {
	if (entries.length === 0) return [];
	const now = new Map(
		sql
			.exec<LedgerOutboxEntry>(
				"SELECT * FROM outbox WHERE ref IN (SELECT value FROM json_each(?))",
				JSON.stringify(entries.map((e) => e.ref)),
			)
			.toArray()
			.map((e) => [e.ref, e]),
	);
	return entries.flatMap((e) => {
		const current = now.get(e.ref);
		return current && current.id === e.id ? [current] : [];
	});
}

/** The records of a pass's entries as message items; entries whose reward is gone are answered apart. */
function itemsOf(
	host: FlushHost,
	projections: LedgerOutboxEntry[],
	webhooks: LedgerOutboxEntry[],
	audits: LedgerOutboxEntry[],
): { items: Item[]; gone: LedgerOutboxEntry[] } {
	const items: Item[] = [];
	const gone: LedgerOutboxEntry[] = [];
	for (const entry of audits) {
		items.push({
			kind: "audit",
			sent: { id: entry.id, ref: entry.ref, version: null },
			value: { id: entry.id, ref: entry.ref, entry: payloadOf(entry, auditEntrySchema) },
		});
	}
	for (const entry of projections) {
		if (isCarriedEntry(entry)) {
			const part = carriedPartOf(host, entry);
			if (part) items.push({ kind: "part", sent: { id: entry.id, ref: entry.ref, version: null }, value: null, part });
			continue;
		}
		const { seq } = payloadOf(entry, projectionPayloadSchema);
		const row = host.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = ?", seq).toArray()[0];
		if (!row) {
			gone.push(entry);
			continue;
		}
		// The event the entry carries goes with it unless an earlier send of the entry carries it still (the
		// entry's version rose while that send was in flight): written once, unless that send is lost (in-flight.ts).
		const { event } = payloadOf(entry, projectionPayloadSchema);
		const carry = event && !host.inFlight?.eventHeld(entry.id, entry.ref, event.eventid, Date.now()) ? event : undefined;
		items.push({
			kind: "reward",
			sent: { id: entry.id, ref: entry.ref, version: row.version, eventid: carry?.eventid ?? null },
			value: { id: entry.id, ref: entry.ref, row: projectedRow(row), ...(carry ? { event: carry } : {}) },
			part: carriedPartOf(host, entry),
		});
	}
	for (const entry of webhooks) {
		items.push({
			kind: "webhook",
			sent: { id: entry.id, ref: entry.ref, version: null },
			value: { id: entry.id, ref: entry.ref, event: payloadOf(entry, webhookEventSchema) },
		});
	}
	return { items, gone };
}

/**
 * Sends a pass's records to the projection queue. Entries and rewards are
 * read now, in the same synchronous step that stamps the messages' sentAt,
 * so a message carries the newest state, and an erasure of a person it names
 * either came before (its payloads are redacted) or at or after sentAt (the
 * consumer holds its webhook events back: db/privacy.ts, erasedSince). A
 * reward that is gone has nothing to project. Answers the entries handled
 * (sent, or gone). Other ledgers' parts handed to this one (`takeCarried`)
 * ride along (withCarried).
 */
export async function sendRecords(
	host: FlushHost,
	readProjections: LedgerOutboxEntry[],
	readWebhooks: LedgerOutboxEntry[],
	readAudits: LedgerOutboxEntry[],
): Promise<number> {
	const fresh = reread(host.sql, [...readProjections, ...readWebhooks, ...readAudits]);
	const projections = fresh.filter((e) => e.kind === "projection" || isCarriedEntry(e));
	const webhooks = fresh.filter((e) => e.kind === "webhook");
	const audits = fresh.filter((e) => e.kind === "audit");
	const { items, gone } = itemsOf(host, projections, webhooks, audits);
	const carried = host.takeCarried?.() ?? [];
	remove(host, gone);
	if (items.length === 0 && carried.length === 0) return gone.length;
	const messages = withCarried(items.length > 0 ? messagesOf(host, items) : [], carried);
	let handled = gone.length;
	for (const batch of packBatches(messages, (m) => jsonBytes(m.message))) {
		const sent = batch.flatMap((m) => m.sent);
		try {
			await host.env.PROJECTION.sendBatch(batch.map((m) => ({ body: m.message, contentType: "json" as const })));
		} catch (error) {
			console.warn("ledger outbox: projection enqueue failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
			const failed = new Set(sent.map((s) => s.id));
			postpone(
				host,
				[...projections, ...webhooks, ...audits].filter((e) => failed.has(e.id)),
				error,
			);
			continue;
		}
		// Held in memory, not in the rows (in-flight.ts): a ledger that forgets them sends again, which changes nothing.
		host.inFlight?.hold(sent, Date.now() + IN_FLIGHT_MS);
		handled += sent.length;
	}
	return handled;
}
