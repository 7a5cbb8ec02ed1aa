import { appTimeZone } from "../db/leaderboard";
import { eventsOf, needsZone, type ProjectionMessage, type ProjectionWrite, partsOf, writeProjectionBatch } from "../db/projection-batch";
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
	let zones: Map<string, string>;
	try {
		zones = await zonesOf(env.DB, accepted);
	} catch (error) {
		retry(accepted, error);
		return;
	}
	for (const group of await writeGroups(env, accepted, zones)) await afterWrite(env, group.items, group.written);
}

/** The time zones of the apps whose referrer rewards move leaderboard counters (cached per isolate: db/leaderboard.ts). */
async function zonesOf(db: D1Database, accepted: Accepted[]): Promise<Map<string, string>> {
	const apps = [...new Set(accepted.filter((a) => needsZone(a.body)).map((a) => a.body.appid))];
	const zones = new Map<string, string>();
	for (const appid of apps) zones.set(appid, await appTimeZone(db, appid));
	return zones;
}

function retry(items: Accepted[], error: unknown): void {
	log("warn", "projection batch not written, retried", { messages: items.length, error: String(error).slice(0, 300) });
	for (const message of messagesOf(items)) message.retry({ delaySeconds: RETRY_DELAY_S });
}

/**
 * Writes the batch as ONE D1 batch. When that fails for a reason other than
 * D1 being busy or down, one message may be what D1 refuses: each message
 * (with the parts it carries) is then written on its own, so the others are
 * not held back with it.
 */
async function writeGroups(
	env: Env,
	accepted: Accepted[],
	zones: Map<string, string>,
): Promise<{ items: Accepted[]; written: ProjectionWrite }[]> {
	const nowIso = new Date().toISOString();
	try {
		const written = await writeProjectionBatch(
			env.DB,
			accepted.map((a) => a.body),
			zones,
			nowIso,
		);
		return [{ items: accepted, written }];
	} catch (error) {
		if (messagesOf(accepted).size === 1 || isD1Unavailable(error)) {
			retry(accepted, error);
			return [];
		}
	}
	const groups: { items: Accepted[]; written: ProjectionWrite }[] = [];
	for (const message of messagesOf(accepted)) {
		const items = accepted.filter((a) => a.message === message);
		try {
			groups.push({
				items,
				written: await writeProjectionBatch(
					env.DB,
					items.map((i) => i.body),
					zones,
					nowIso,
				),
			});
		} catch (error) {
			retry(items, error);
		}
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
async function afterWrite(env: Env, items: Accepted[], written: ProjectionWrite): Promise<void> {
	const heldBack = new Set([...written.heldBack].flatMap((i) => (items[i] ? [items[i].body] : [])));
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
