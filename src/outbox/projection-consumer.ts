import { appLayout } from "../db/app-layout";
import { appTimeZone } from "../db/leaderboard";
import {
	eventsOf,
	needsZone,
	type ProjectionMessage,
	type ProjectionWrite,
	partsOf,
	writeProjectionBatch,
	writeShardRows,
} from "../db/projection-batch";
import { type ShardPool, shardPool } from "../db/shards";
import { isD1Unavailable } from "../instrument/d1-availability";
import { instrumentEnv, recordProjectionLag } from "../instrument/d1-metrics";
import type { SentEntry } from "../ledger/outbox-entries";
import { projectionMessageSchema } from "../ledger/projection-message";
import { ledgerFor } from "../ledger/stub";
import { sendInBatches } from "./events";
import { forEachLimited } from "./parallel";

/**
 * Consumer of the projection queue (issue 33; the ledger side is
 * ledger/records-queued.ts). A batch holds the records of many ledgers'
 * flushes, of many users and apps: they are written in ONE D1 batch
 * (db/projection-batch.ts), so under load a conversion's share of the
 * projection's round trips is a fraction of one instead of one per ledger
 * it touched. Then the webhook events of apps with a webhook URL go to the
 * outbox queue, and each ledger is told what was written
 * (`UserLedger.projectionWritten`), which removes its outbox entries.
 *
 * Failures leave the ledgers' entries in place, so nothing is lost: a D1
 * batch that fails is retried by the queue, and a ledger whose
 * acknowledgement does not arrive sends its entries again when their hold
 * ends (records-queued.ts), which the version guard makes harmless.
 *
 * A message may carry the parts of several ledgers (a conversion's referrer's
 * records ride in its friend's message: db/projection-batch.ts, `also`):
 * each part is written and acknowledged as a message of its own would be,
 * and the queue message is acknowledged or retried once, as a whole.
 */

const log = (level: "log" | "warn" | "error", msg: string, fields: Record<string, unknown>) =>
	console[level](JSON.stringify({ msg, ...fields }));

/** Delay of the queue's retry of a batch D1 refused. */
const RETRY_DELAY_S = 2;
/** Acknowledgements sent at a time. */
const ACK_PARALLEL = 16;

/** One ledger's part of a queue message (several parts may share one message). */
interface Accepted {
	message: Message<unknown>;
	body: ProjectionMessage;
}

/** The queue messages of `items`, each once. */
const messagesOf = (items: Accepted[]) => new Set(items.map((i) => i.message));

export async function projectionQueue(batch: MessageBatch<unknown>, rawEnv: Env, _ctx?: ExecutionContext): Promise<void> {
	const env = instrumentEnv(rawEnv, "projection");
	const accepted: Accepted[] = [];
	for (const message of batch.messages) {
		const parsed = projectionMessageSchema.safeParse(message.body);
		if (parsed.success) for (const body of partsOf(parsed.data)) accepted.push({ message, body });
		else {
			// A body this code cannot read would fail every retry: dropped, and the ledger sends its entries again.
			log("error", "projection message with an invalid body dropped", { messageid: message.id, issues: parsed.error.issues.slice(0, 3) });
			message.ack();
		}
	}
	if (accepted.length === 0) return;
	let places: Places;
	try {
		places = await placesOf(env, accepted);
	} catch (error) {
		retry(accepted, error);
		return;
	}
	for (const group of await writeGroups(env, accepted, places)) await afterWrite(env, group);
}

/**
 * What the batch's writes need to know of its apps: the time zones of those whose referrer rewards move board
 * counters, and which parts' reward rows go to a shard (issue 50 phase 2b-1: an app whose layout is "sharded"),
 * with the pool that routes them. Both cached per isolate (db/leaderboard.ts, db/app-layout.ts).
 */
interface Places {
	zones: Map<string, string>;
	/** The parts whose reward rows go to the shard of their ledger's owner, not to DB. */
	sharded: Set<ProjectionMessage>;
	pool: ShardPool | null;
}

async function placesOf(env: Env, accepted: Accepted[]): Promise<Places> {
	const zones = new Map<string, string>();
	for (const appid of new Set(accepted.filter((a) => needsZone(a.body)).map((a) => a.body.appid)))
		zones.set(appid, await appTimeZone(env.DB, appid));
	const shardedApps = new Set<string>();
	for (const appid of new Set(accepted.filter((a) => a.body.rewards.length > 0).map((a) => a.body.appid)))
		if ((await appLayout(env.DB, appid)) === "sharded") shardedApps.add(appid);
	const sharded = new Set(accepted.filter((a) => a.body.rewards.length > 0 && shardedApps.has(a.body.appid)).map((a) => a.body));
	return { zones, sharded, pool: sharded.size > 0 ? await shardPool(env) : null };
}

function retry(items: Accepted[], error: unknown): void {
	log("warn", "projection batch not written, retried", { messages: items.length, error: String(error).slice(0, 300) });
	for (const message of messagesOf(items)) message.retry({ delaySeconds: RETRY_DELAY_S });
}

/** Items written, with what the control database's batch read for them (db/projection-batch.ts, ProjectionWrite). */
interface Written {
	items: Accepted[];
	withHooks: Set<string>;
	/** The parts whose webhook events were held back for an erasure. */
	heldBack: Set<ProjectionMessage>;
}

/**
 * Writes `items` as ONE batch per database they touch, at once: the control
 * database's (audit entries, events, and the reward rows of apps in the "one"
 * layout) and one per shard holding reward rows of sharded apps (issue 50
 * phase 2b-1: a part's rows all go to its ledger owner's shard, so the
 * counters' deltas are read from the previous projected row in the same
 * transaction as on one database). Each batch is idempotent (the version
 * guard, event and entry ids), so a message whose batch in one database
 * failed is retried whole, and rewriting what the others wrote changes
 * nothing. `written`: null when the control database's batch failed.
 */
async function writeOnce(
	env: Env,
	items: Accepted[],
	places: Places,
	nowIso: string,
): Promise<{ written: Written | null; failures: { items: Accepted[]; error: unknown }[] }> {
	const byShard = new Map<number, Accepted[]>();
	const { pool, sharded, zones } = places;
	if (pool)
		for (const item of items.filter((i) => sharded.has(i.body))) {
			const n = pool.numberFor(item.body.appid, item.body.userkey);
			byShard.set(n, [...(byShard.get(n) ?? []), item]);
		}
	const bodies = items.map((i) => i.body);
	const shardWrites = [...byShard].map(([n, part]) => ({
		items: part,
		done: writeShardRows(
			pool?.shards[n] ?? env.DB,
			part.map((p) => p.body),
			zones,
		),
	}));
	// Every database at once: the batch costs about its slowest database's round trip.
	const shardsDone = Promise.allSettled(shardWrites.map((w) => w.done));
	const [db] = await Promise.allSettled([writeProjectionBatch(env.DB, bodies, zones, nowIso, (m) => sharded.has(m))]);
	const shards = await shardsDone;
	const failures = shards.flatMap((r, i) => (r.status === "rejected" ? [{ items: shardWrites[i]?.items ?? [], error: r.reason }] : []));
	if (db?.status !== "fulfilled") return { written: null, failures: [{ items, error: db?.reason }, ...failures] };
	const { withHooks, heldBack }: ProjectionWrite = db.value;
	const heldParts = new Set([...heldBack].flatMap((i) => (bodies[i] ? [bodies[i]] : [])));
	const failed = messagesOf(failures.flatMap((f) => f.items));
	return { written: { items: items.filter((i) => !failed.has(i.message)), withHooks, heldBack: heldParts }, failures };
}

/**
 * Writes the batch (writeOnce). A message whose write failed for a reason
 * other than D1 being busy or down may be what D1 refuses: each such message
 * (with the parts it carries) is then written on its own, so the others are
 * not held back with it; a busy or down database retries its messages only
 * (a shard down holds back the messages of its owners, not the others').
 */
async function writeGroups(env: Env, accepted: Accepted[], places: Places): Promise<Written[]> {
	const nowIso = new Date().toISOString();
	const first = await writeOnce(env, accepted, places, nowIso);
	const groups = first.written && first.written.items.length > 0 ? [first.written] : [];
	if (first.failures.length === 0) return groups;
	const retried = new Set<Message<unknown>>();
	for (const failure of first.failures)
		if (isD1Unavailable(failure.error) || messagesOf(accepted).size === 1) {
			for (const message of messagesOf(failure.items)) retried.add(message);
			log("warn", "projection batch not written, retried", { messages: failure.items.length, error: String(failure.error).slice(0, 300) });
		}
	for (const message of retried) message.retry({ delaySeconds: RETRY_DELAY_S });
	const alone = messagesOf(first.failures.flatMap((f) => f.items));
	for (const message of alone) {
		if (retried.has(message)) continue;
		const items = accepted.filter((a) => a.message === message);
		const own = await writeOnce(env, items, places, nowIso);
		if (own.failures.length === 0 && own.written) groups.push(own.written);
		else retry(items, own.failures[0]?.error);
	}
	return groups;
}

/**
 * After the D1 batch committed: the webhook events of apps with a webhook URL
 * go to the outbox queue (those refused stay in their ledgers, to be sent
 * again), then each ledger is told what was written, then the messages are
 * acknowledged. A lost acknowledgement only makes the ledger send again.
 * Webhook events held back for an erasure (db/projection-batch.ts) are
 * neither sent nor acknowledged: their ledger sends them again, redacted.
 */
async function afterWrite(env: Env, written: Written): Promise<void> {
	const { items, heldBack } = written;
	const events = items.flatMap(({ body }) => (written.withHooks.has(body.appid) && !heldBack.has(body) ? eventsOf(body) : []));
	const failed = new Set<string>();
	if (events.length > 0) {
		const report = await sendInBatches(env, events);
		for (const event of report.failed) failed.add(event.eventid);
		if (report.failed.length > 0)
			log("warn", "projection: webhook enqueue failed", { events: report.failed.length, error: String(report.error) });
	}
	const now = Date.now();
	const byLedger = new Map<string, { appid: string; userkey: string; acks: SentEntry[] }>();
	const acksOf = (appid: string, userkey: string) => {
		const key = `${appid}\u0000${userkey}`;
		let ledger = byLedger.get(key);
		if (!ledger) {
			ledger = { appid, userkey, acks: [] };
			byLedger.set(key, ledger);
		}
		return ledger.acks;
	};
	for (const { body } of items) {
		recordProjectionLag(now - body.sentAt);
		if (body.carrier) {
			// Kept in its carrier's outbox (ledger/carried-records.ts): its own ledger holds no entry for it. Acknowledged
			// to the carrier: its entry of its own, if any (else it rode inside a reward entry, acknowledged with it).
			const { userkey, id, ref } = body.carrier;
			if (id !== undefined && ref !== undefined) acksOf(body.appid, userkey).push({ id, ref, version: null });
			continue;
		}
		const ledger = { acks: acksOf(body.appid, body.userkey) };
		for (const r of body.rewards) {
			// The event a reward's entry carries is acknowledged only once it went (written, and enqueued when the app
			// has a webhook URL); otherwise the entry stays with it and is sent again (outbox-entries.ts, deleteAcked).
			const went = r.event !== undefined && !heldBack.has(body) && !failed.has(r.event.eventid);
			ledger.acks.push({ id: r.id, ref: r.ref, version: r.row.version, eventid: went ? r.event?.eventid : null });
		}
		for (const a of body.audits) ledger.acks.push({ id: a.id, ref: a.ref, version: null });
		if (heldBack.has(body)) continue;
		for (const w of body.webhooks) if (!failed.has(w.event.eventid)) ledger.acks.push({ id: w.id, ref: w.ref, version: null });
	}
	// A ledger with nothing to acknowledge (a conversion's referrer whose records its friend kept) is not called.
	const toTell = [...byLedger.values()].filter((l) => l.acks.length > 0);
	await forEachLimited(toTell, ACK_PARALLEL, async ({ appid, userkey, acks }) => {
		try {
			await ledgerFor(env, appid, userkey).projectionWritten(acks);
		} catch (error) {
			log("warn", "projection: acknowledgement to a ledger failed", { appid, userkey, error: String(error).slice(0, 300) });
		}
	});
	for (const message of messagesOf(items)) message.ack();
}
