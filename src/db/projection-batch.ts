import { z } from "zod";
import { rewardId } from "../domain/ledger-ids";
import type { OutboxEvent } from "../domain/outbox-event";
import { type AuditEntry, auditStatement } from "./audit";
import { announcedStatements } from "./event-grants";
import { type LeaderboardReward, leaderboardCounters, type OwnerStore } from "./leaderboard";
import { batchLeaderboardCounters, summableRewards } from "./leaderboard-batch";
import { allOf, appHasWebhook, insertOutboxEvent, type SqlCondition } from "./outbox-events";
import { erasedSince } from "./privacy";
import { type ProjectedRewardRow, projectionStatement } from "./projection";
import { batchRewardCounters, type ProjectedReward, rewardCounters } from "./stats";

/**
 * The projection queue (issue 33): a ledger's flush sends its records (reward
 * rows for the projection, webhook events, audit entries) as ONE message to
 * the `PROJECTION` queue instead of writing D1 itself, and the consumer
 * (src/outbox/projection-consumer.ts) writes the records of many ledgers'
 * messages in ONE D1 batch. Every statement is the one the ledger's own flush
 * used (versioned upsert, counters guarded by the version, event id and
 * audit entryid keys), so a message written twice, or an older one written
 * after a newer one, changes nothing: the version guard decides.
 */

/** What the projection and its counters copy of a ledger's reward row (ledger/schema.ts RewardRow; amounts in hundredths). */
export type ProjectedRow = ProjectedRewardRow & LeaderboardReward & ProjectedReward;

/**
 * One message of the projection queue: the records of one flush pass of one
 * ledger, each with the id and ref (and, for a reward, the version inside its
 * row) of the ledger's outbox entry it delivers, so the consumer's
 * acknowledgement removes exactly what was written. Its zod schema, which
 * the consumer parses it with, is ledger/projection-message.ts.
 */
export interface ProjectionMessage {
	projection: 1;
	appid: string;
	userkey: string;
	/** When the ledger sent it (epoch ms): the lag of D1 behind the ledger is measured from here. */
	sentAt: number;
	/** `event`: the `conversion.recorded` event that travels inside the reward's entry (issue 33), written with the row. */
	rewards: { id: number; ref: string; row: ProjectedRow; event?: OutboxEvent }[];
	webhooks: { id: number; ref: string; event: OutboxEvent }[];
	audits: { id: number; ref: string; entry: AuditEntry }[];
	/**
	 * Other ledgers' records carried in the same queue message (issue 49: one message per conversion): the
	 * referrer's records of a conversion ride in its friend's flush (ledger/conversion-grant.ts). Each part is
	 * written and acknowledged to its own ledger as if it had come alone; a part carries no parts of its own.
	 */
	also?: ProjectionMessage[];
	/**
	 * A part kept in another ledger's outbox, its carrier's (issue 49, ledger/carried-records.ts: a conversion's
	 * referrer hands its new rewards' records to its friend's ledger, which writes them with its own grant): the
	 * part's own ledger holds no entry for them, so nothing of it is acknowledged there; `id` and `ref` name the
	 * carrier's entry to acknowledge, absent when the part rides inside the carrier's reward entry (acknowledged
	 * with it).
	 */
	carrier?: { userkey: string; id?: number; ref?: string };
}

/** The ledgers' parts of one queue message: its own, then those it carries (each without `also`). */
export function partsOf(message: ProjectionMessage): ProjectionMessage[] {
	const { also, ...own } = message;
	return [own, ...(also ?? [])];
}

/** A message's webhook events: those of webhook entries, then those carried by reward entries. */
export const eventsOf = (message: ProjectionMessage): OutboxEvent[] => [
	...message.webhooks.map((w) => w.event),
	...message.rewards.flatMap((r) => (r.event ? [r.event] : [])),
];

/**
 * The row statements of one message's rewards (the counters, then the projection upsert, per reward, in the order the
 * ledger's own flush ran them), for the database `owners` names: the control database's or a shard's. `zones`: time
 * zones of the apps with referrer rewards.
 */
function rewardStatements(
	db: D1Database,
	message: ProjectionMessage,
	zones: ReadonlyMap<string, string>,
	counted: ReadonlySet<string>,
	summed: ReadonlySet<string>,
	owners: OwnerStore,
): D1PreparedStatement[] {
	const { appid, userkey } = message;
	const statements: D1PreparedStatement[] = [];
	const zone = zones.get(appid) ?? "UTC";
	for (const { row } of message.rewards) {
		// Counters first: they compare the row with the projection's current version (db/stats.ts, db/leaderboard.ts). The
		// stats of a reward that is once in the batch were counted at its start, with the others' (batchRewardCounters);
		// so were the leaderboard counters of the rewards summableRewards picks (batchLeaderboardCounters).
		const id = rewardId(userkey, row.seq);
		if (!counted.has(id)) statements.push(rewardCounters(db, appid, userkey, row));
		if (!summed.has(id)) statements.push(...leaderboardCounters(db, appid, userkey, zone, row, owners));
		statements.push(projectionStatement(db, appid, userkey, row));
	}
	return statements;
}

/** The control database's statements of one message that are not its reward rows: its audit entries, its events. */
function recordStatements(db: D1Database, message: ProjectionMessage, nowIso: string): D1PreparedStatement[] {
	const { appid } = message;
	const statements: D1PreparedStatement[] = message.audits.map(({ entry }) => auditStatement(db, entry));
	// Recorded already marked enqueued, only when the app has a webhook URL (the consumer sends them right after the
	// batch), and only when nobody the ledger copies was erased since the message was sent (db/privacy.ts).
	const onlyIf = allOf(appHasWebhook(appid), notErased(message));
	for (const event of eventsOf(message)) statements.push(insertOutboxEvent(db, event, onlyIf, { enqueuedAt: nowIso }));
	statements.push(...announcedStatements(db, appid, eventsOf(message)));
	return statements;
}

/**
 * The projection rows of `messages` (their rewards, the stats and board counters those move) for ONE database: the
 * counters of the rewards that can be counted together first, in one statement per 100 before every upsert, then each
 * message's own (rewardStatements). `owners`: the control database's "one" or a shard's.
 */
function rowStatements(
	db: D1Database,
	messages: ProjectionMessage[],
	zones: ReadonlyMap<string, string>,
	owners: OwnerStore,
): { head: D1PreparedStatement[]; perMessage: D1PreparedStatement[][] } {
	// The stats of the rewards that are once in the batch, in one statement per 100 before every upsert (db/stats.ts).
	const seen = new Map<string, number>();
	for (const m of messages)
		for (const { row } of m.rewards) seen.set(rewardId(m.userkey, row.seq), (seen.get(rewardId(m.userkey, row.seq)) ?? 0) + 1);
	const once = messages.flatMap((m) =>
		m.rewards
			.filter(({ row }) => seen.get(rewardId(m.userkey, row.seq)) === 1)
			.map(({ row }) => ({ appid: m.appid, userkey: m.userkey, row })),
	);
	const counted = new Set(once.map((r) => rewardId(r.userkey, r.row.seq)));
	// The leaderboard counters of the referrer rewards that can be summed, per counter, before every upsert (db/leaderboard-batch.ts).
	const all = messages.flatMap((m) => m.rewards.map(({ row }) => ({ appid: m.appid, userkey: m.userkey, row })));
	const summed = summableRewards(all);
	const sums = batchLeaderboardCounters(
		db,
		all.filter((r) => summed.has(rewardId(r.userkey, r.row.seq))).map((r) => ({ ...r, zone: zones.get(r.appid) ?? "UTC" })),
		owners,
	);
	return {
		head: [...batchRewardCounters(db, once), ...sums],
		perMessage: messages.map((m) => rewardStatements(db, m, zones, counted, summed, owners)),
	};
}

/**
 * Writes the reward rows of `messages`, every one of an app whose layout is "sharded" and whose owner's shard is
 * `shard`, in ONE batch of that shard (issue 50 phase 2b-1): the same statements as on the control database, the
 * board's erased guard read from the shard's `erased_owners`. Idempotent as the control database's: the version guard
 * decides.
 */
export async function writeShardRows(shard: D1Database, messages: ProjectionMessage[], zones: ReadonlyMap<string, string>): Promise<void> {
	const { head, perMessage } = rowStatements(shard, messages, zones, "shard");
	const statements = [...head, ...perMessage.flat()];
	if (statements.length > 0) await shard.batch(statements);
}

/** The negation of erasedSince for the message's ledger and send time. */
function notErased(message: ProjectionMessage): SqlCondition {
	const erased = erasedSince(message.userkey, new Date(message.sentAt).toISOString());
	return { sql: `NOT ${erased.sql}`, args: erased.args };
}

/** Whether a message has a referrer reward, whose leaderboard counters need its app's time zone. */
export const needsZone = (message: ProjectionMessage) => message.rewards.some(({ row }) => row.usertype === "Referrer");

const hooksRow = z.object({ appid: z.string(), hooks: z.number() });
const erasedRow = z.object({ i: z.number(), erased: z.number() });

/** What a batch wrote: the apps with a webhook URL, and the messages whose webhook events were held back. */
export interface ProjectionWrite {
	/** Apps with a webhook URL among those with events in the batch: their recorded events are to be sent. */
	withHooks: Set<string>;
	/**
	 * Indexes (into `messages`) of those sent before an erasure of someone their ledger copies
	 * (db/privacy.ts, erasedSince): their webhook events were not written, since their payloads may still
	 * name the person; not acknowledged, the ledger sends them again, redacted.
	 */
	heldBack: Set<number>;
}

/**
 * Writes the records of `messages` (any number of ledgers and apps) in ONE
 * D1 batch, a transaction: all or nothing. Its last statements read, per app
 * that has webhook events in it, whether the app has a webhook URL, and per
 * message with webhook events, whether they were held back (an erasure).
 */
export async function writeProjectionBatch(
	db: D1Database,
	messages: ProjectionMessage[],
	zones: ReadonlyMap<string, string>,
	nowIso: string,
	rowsElsewhere: (message: ProjectionMessage) => boolean = () => false,
): Promise<ProjectionWrite> {
	// The reward rows of apps in the "one" layout; those of sharded apps go to their shards (writeShardRows).
	const own = messages.map((m) => (rowsElsewhere(m) ? { ...m, rewards: [] } : m));
	const { head, perMessage } = rowStatements(db, own, zones, "one");
	const statements = [
		...head,
		...messages.flatMap((m, i) => {
			const [audits, records] = [m.audits.length, recordStatements(db, m, nowIso)];
			// In the order the ledger's own flush ran them: audits, the reward rows, the events.
			return [...records.slice(0, audits), ...(perMessage[i] ?? []), ...records.slice(audits)];
		}),
	];
	const apps = [...new Set(messages.filter((m) => eventsOf(m).length > 0).map((m) => m.appid))];
	const hookReads = apps.map((appid) => {
		const hooks = appHasWebhook(appid);
		return db.prepare(`SELECT ? AS appid, ${hooks.sql} AS hooks`).bind(appid, ...hooks.args);
	});
	const erasedReads = messages.flatMap((m, i) => {
		if (eventsOf(m).length === 0) return [];
		const erased = erasedSince(m.userkey, new Date(m.sentAt).toISOString());
		return [db.prepare(`SELECT ? AS i, ${erased.sql} AS erased`).bind(i, ...erased.args)];
	});
	const written: ProjectionWrite = { withHooks: new Set(), heldBack: new Set() };
	if (statements.length === 0) return written;
	const results = await db.batch([...statements, ...hookReads, ...erasedReads]);
	for (const result of results.slice(statements.length, statements.length + hookReads.length)) {
		const row = result.results[0];
		if (row === undefined) continue;
		const read = hooksRow.parse(row);
		if (read.hooks === 1) written.withHooks.add(read.appid);
	}
	for (const result of results.slice(statements.length + hookReads.length)) {
		const read = erasedRow.parse(result.results[0]);
		if (read.erased === 1) written.heldBack.add(read.i);
	}
	return written;
}
