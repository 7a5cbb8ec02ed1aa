import { rowsTargetOf } from "../db/app-layout";
import { isTestAppid } from "../db/apps";
import { auditEntrySchema, auditStatement } from "../db/audit";
import { announcedStatements } from "../db/event-grants";
import { appTimeZone, leaderboardCounters } from "../db/leaderboard";
import { appHasWebhook, insertOutboxEvent } from "../db/outbox-events";
import { type AssignedCoupon, claimCoupon, projectionStatement, releaseCoupon, sendFlushBatch } from "../db/projection";
import type { ProjectionMessage } from "../db/projection-batch";
import { rewardCounters } from "../db/stats";
import { rewardId } from "../domain/ledger-ids";
import type { OutboxEvent } from "../domain/outbox-event";
import { sendInBatches } from "../outbox/events";
import { isCarriedEntry, writeCarried } from "./carried-records";
import { holdsCode } from "./coupons";
import { NO_HOLDS } from "./in-flight";
import { deleteAcked, deleteEntries, errorText, type FlushHost, payloadOf, postpone, remove } from "./outbox-entries";
import { payoutMessages } from "./payouts";
import { erasedAt } from "./privacy";
import { sendRecords, takeRecords } from "./records-queued";
import { sendRewardEmails } from "./reward-emails";
import type { LedgerOutboxEntry, RewardRow } from "./schema";
import { couponClaimSchema, projectionPayloadSchema, webhookEventSchema } from "./stored-json";

export { backoffMs, type FlushHost } from "./outbox-entries";
export { queueConversionEvent, queueProjection, queueProjectionOf, queueWebhook } from "./outbox-queue";

/**
 * The ledger's transactional outbox. Entries are written in the same storage
 * transaction as the change they report, then delivered to D1 / the queue by
 * `flushOutbox`. An entry is deleted only after its delivery succeeded, and
 * every delivery step is idempotent (versioned upsert, event id primary key,
 * coupon claim keyed by reward), so a process that dies between a delivery
 * and the delete only causes a harmless replay.
 */

/** How long an empty coupon pool waits before the claim is tried again. */
export const EMPTY_POOL_RETRY_MS = 10 * 60 * 1000;
/** Entries handled per flush pass; keeps D1 batches and bound-parameter lists small. */
const BATCH = 100;

/**
 * Projections and webhook events of one pass: ONE D1 round trip (a batch is
 * a transaction), then the queue. The events are recorded already marked
 * enqueued, and only when the app has a webhook URL (the batch's last
 * statement says whether it has); the ledger's own entries retry the send
 * until it succeeds, so the sweep need not, and no second D1 round trip
 * marks them. A pass replayed after a send that succeeded (the process died
 * before the entries were removed) sends again: at least once, as the
 * consumer (which skips delivered events) and receivers (`webhook-id`) expect.
 */

/**
 * The leaderboard's counters of a pass's projected rows (db/leaderboard.ts),
 * batched before each row's upsert. Only referrer rewards move them, so only
 * then is the app's time zone read (cached per isolate). Kept apart so the
 * hook follows the projection wherever it runs.
 */
async function leaderboardHook(host: FlushHost, rows: RewardRow[], target: RowsTarget): Promise<(row: RewardRow) => D1PreparedStatement[]> {
	if (!rows.some((row) => row.usertype === "Referrer")) return () => [];
	const zone = await appTimeZone(host.env.DB, host.appid);
	return (row) => leaderboardCounters(target.db, host.appid, host.userkey, zone, row, target.owners);
}

type RowsTarget = Awaited<ReturnType<typeof rowsTargetOf>>;

async function deliverRecords(
	host: FlushHost,
	records: LedgerOutboxEntry[],
	webhooks: LedgerOutboxEntry[],
	audits: LedgerOutboxEntry[],
): Promise<number> {
	const db = host.env.DB;
	// Other ledgers' records kept here (carried-records.ts) first: an entry that keeps them may go below.
	if (!(await writeCarried(host, records, [...webhooks, ...audits]))) return 0;
	const projections = records.filter((e) => !isCarriedEntry(e));
	// Audit entries (audit.ts) ride in the same batch; their entryid makes a replay add nothing.
	const statements: D1PreparedStatement[] = audits.map((entry) => auditStatement(db, payloadOf(entry, auditEntrySchema)));
	const projected: { entry: LedgerOutboxEntry; version: number }[] = [];
	const gone: LedgerOutboxEntry[] = [];
	const rows: { entry: LedgerOutboxEntry; row: RewardRow }[] = [];
	for (const entry of projections) {
		const { seq } = payloadOf(entry, projectionPayloadSchema);
		const row = host.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = ?", seq).toArray()[0];
		if (row) rows.push({ entry, row });
		else gone.push(entry);
	}
	let board: (row: RewardRow) => D1PreparedStatement[];
	// A sharded app's reward rows go to the owner's shard (issue 50 phase 2b-1, db/app-layout.ts), the rest to D1.
	let target: RowsTarget;
	try {
		target = await rowsTargetOf(host.env, host.appid, host.userkey);
		board = await leaderboardHook(
			host,
			rows.map((r) => r.row),
			target,
		);
	} catch (error) {
		console.warn("ledger outbox: time zone or layout read failed", { appid: host.appid, error: errorText(error) });
		postpone(host, [...rows.map((r) => r.entry), ...webhooks, ...audits], error);
		return 0;
	}
	const rowStatements: D1PreparedStatement[] = [];
	for (const { entry, row } of rows) {
		// The row is read now, so the upsert carries the newest state; its version decides whether the entry may go.
		rowStatements.push(
			rewardCounters(target.db, host.appid, host.userkey, row),
			...board(row),
			projectionStatement(target.db, host.appid, host.userkey, row),
		);
		projected.push({ entry, version: row.version });
	}
	if (!target.elsewhere) statements.push(...rowStatements);
	const queued = webhooks.map((entry) => ({ entry, event: payloadOf(entry, webhookEventSchema) }));
	// The conversion.recorded events that travel inside projection entries (queueProjection) go with the others.
	const carried = projected.flatMap(({ entry, version }) => {
		const { event } = payloadOf(entry, projectionPayloadSchema);
		return event ? [{ entry, version, event }] : [];
	});
	const events: OutboxEvent[] = [...queued.map((q) => q.event), ...carried.map((c) => c.event)];
	const hooks = appHasWebhook(host.appid);
	const now = new Date().toISOString();
	for (const event of events) statements.push(insertOutboxEvent(db, event, hooks, { enqueuedAt: now }));
	// A conversion is announced once every grant of it was confirmed: D1's copy of the event, and no completion (db/event-grants.ts).
	statements.push(...announcedStatements(db, host.appid, events));
	if (gone.length > 0) remove(host, gone);
	if (statements.length === 0 && rowStatements.length === 0) return gone.length;
	let hasHooks: boolean;
	try {
		// The shard's batch first: both are idempotent, so a D1 batch that fails after it only makes the entries go again.
		if (target.elsewhere && rowStatements.length > 0) await sendFlushBatch(target.db, rowStatements, null);
		// The batch's last statement (only when there are events) says whether the app has a webhook URL.
		hasHooks = statements.length > 0 ? await sendFlushBatch(db, statements, events.length > 0 ? hooks : null) : false;
	} catch (error) {
		console.warn("ledger outbox: D1 write failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, [...projections.filter((p) => !gone.includes(p)), ...webhooks, ...audits], error);
		return gone.length;
	}
	// What the batch delivered goes in one transaction: the audits, the projections and, when the app has no webhook URL, the events.
	const delivered = hasHooks ? audits : [...audits, ...webhooks];
	// A projection goes only at the version the batch carried, and one carrying an event only once that event went too
	// (deleteAcked): with a webhook URL, that is after the queue took it, below.
	const acks = projected.map(({ entry, version }) => ({
		id: entry.id,
		ref: entry.ref,
		version,
		eventid: hasHooks ? null : eventIdOf(entry),
	}));
	host.transactionSync(() => {
		deleteEntries(host.sql, delivered);
		deleteAcked(host.sql, acks);
	});
	if (events.length === 0 || !hasHooks) return gone.length + projected.length + delivered.length;
	// In as many sendBatch calls as the Queues limits need: the entries of a batch that went are removed, the others wait.
	const { failed, error } = await sendInBatches(host.env, events);
	const stays = new Set(failed.map((e) => e.eventid));
	const sent: LedgerOutboxEntry[] = [];
	const waiting: LedgerOutboxEntry[] = [];
	for (const { entry, event } of queued) (stays.has(event.eventid) ? waiting : sent).push(entry);
	remove(host, sent);
	const carriedSent = carried.filter((c) => !stays.has(c.event.eventid));
	if (carriedSent.length > 0)
		host.transactionSync(() =>
			deleteAcked(
				host.sql,
				carriedSent.map(({ entry, version, event }) => ({ id: entry.id, ref: entry.ref, version, eventid: event.eventid })),
			),
		);
	waiting.push(...carried.filter((c) => stays.has(c.event.eventid)).map((c) => c.entry));
	if (waiting.length > 0) {
		console.warn("ledger outbox: enqueue failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, waiting, error);
	}
	return gone.length + projected.length + audits.length + sent.length;
}

/** The id of the event a projection entry carries, or null. */
const eventIdOf = (entry: LedgerOutboxEntry) => payloadOf(entry, projectionPayloadSchema).event?.eventid ?? null;

async function runCouponClaim(host: FlushHost, entry: LedgerOutboxEntry): Promise<boolean> {
	const claim = payloadOf(entry, couponClaimSchema);
	const row = host.sql.exec<RewardRow>("SELECT * FROM rewards WHERE seq = ?", claim.seq).toArray()[0];
	// Nothing to claim for a reward that is no longer approved (or a claim queued, before codes waited for
	// approval, for a reward still under review): its approval queues a new claim (coupons.ts). An erased
	// user takes no code any more: nobody could be given it.
	if (!row || !holdsCode(row.status) || row.coupon !== null || erasedAt(host.sql) !== null) {
		remove(host, [entry]);
		return true;
	}
	let coupon: AssignedCoupon | null;
	try {
		coupon = await claimCoupon(host.env.DB, { ...claim, livemode: !isTestAppid(host.appid) }, new Date().toISOString());
	} catch (error) {
		console.warn("ledger outbox: coupon claim failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, [entry], error);
		return false;
	}
	if (!coupon) {
		// Not an error of ours: the campaign ran out of codes. The reward keeps waiting and gets one once codes are added.
		console.warn("ledger outbox: coupon pool empty", {
			appid: host.appid,
			campaignid: claim.campaignid,
			rewarddtlid: rewardId(host.userkey, claim.seq),
		});
		postpone(host, [entry], "coupon pool empty", EMPTY_POOL_RETRY_MS);
		return false;
	}
	host.assignCoupon(entry, claim, coupon);
	return true;
}

/** Gives a released code back to its pool (coupons.ts); idempotent, so a replay frees nothing twice. */
async function runCouponRelease(host: FlushHost, entry: LedgerOutboxEntry): Promise<boolean> {
	const claim = payloadOf(entry, couponClaimSchema);
	try {
		await releaseCoupon(host.env.DB, claim.couponKey);
	} catch (error) {
		console.warn("ledger outbox: coupon release failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, [entry], error);
		return false;
	}
	remove(host, [entry]);
	return true;
}

const isCouponEntry = (e: LedgerOutboxEntry) => e.kind === "coupon" || e.kind === "coupon_release";

/** Hands payout entries (payouts.ts) to the Stripe queue; removed once sent, postponed when the queue refuses. */
async function sendPayouts(host: FlushHost, entries: LedgerOutboxEntry[]): Promise<number> {
	if (entries.length === 0) return 0;
	try {
		await host.env.STRIPE_WORK.sendBatch(payoutMessages(host.appid, host.userkey, entries).map((body) => ({ body })));
	} catch (error) {
		console.warn("ledger outbox: payout enqueue failed", { appid: host.appid, userkey: host.userkey, error: errorText(error) });
		postpone(host, entries, error);
		return 0;
	}
	remove(host, entries);
	return entries.length;
}

/** What one pass did: entries delivered, and whether it read a full batch (more may be due). */
export interface FlushPass {
	done: number;
	more: boolean;
}

/**
 * One pass over the entries that are due: coupon claims and releases first,
 * one at a time in the order they were queued (they produce projection
 * updates; a release queued while a claim of the same reward was under way
 * waits for the next pass, so it runs after that claim), then projections
 * and webhooks together.
 */
export async function flushOutboxOnce(host: FlushHost): Promise<FlushPass> {
	let done = 0;
	// An explicit flush delivers every record now, those on their way through the projection queue too; otherwise the
	// entries held in memory for the queue's acknowledgement wait (in-flight.ts).
	const due = () => {
		const now = Date.now();
		return host.sql
			.exec<LedgerOutboxEntry>(
				`SELECT * FROM outbox WHERE (next_attempt_at <= ? AND ${NOT_HELD_SQL})${host.allRecords ? " OR kind IN ('projection', 'carried', 'webhook', 'audit')" : ""} ORDER BY id LIMIT ?`,
				now,
				host.inFlight?.heldJson(now) ?? NO_HOLDS,
				BATCH,
			)
			.toArray();
	};
	let entries = due();
	const more = entries.length === BATCH;
	const coupons = entries.filter(isCouponEntry);
	for (const entry of coupons) {
		if (await (entry.kind === "coupon" ? runCouponClaim(host, entry) : runCouponRelease(host, entry))) done++;
	}
	done += await sendPayouts(
		host,
		entries.filter((e) => e.kind === "payout"),
	);
	// Claims queue projections: read again only when there were any.
	if (coupons.length > 0) entries = due().filter((e) => !isCouponEntry(e));
	done += await (host.queued ? sendRecords : deliverRecords)(
		host,
		entries.filter((e) => e.kind === "projection" || isCarriedEntry(e)),
		entries.filter((e) => e.kind === "webhook"),
		entries.filter((e) => e.kind === "audit"),
	);
	// After the coupon claims of this pass, so a coupon reward's email names its code.
	done += await sendRewardEmails(
		host,
		entries.filter((e) => e.kind === "email"),
		(waiting, error) => postpone(host, waiting, error),
	);
	return { done, more };
}

/**
 * Passes while the last one read a full batch and delivered some of it: a
 * shorter batch was everything due (writes made during the flush make the
 * FlushSchedule go round once more), and a pass that delivered nothing
 * would only read the same entries again. Returns the entries delivered.
 */
export async function flushOutbox(host: FlushHost): Promise<number> {
	let done = 0;
	for (let pass = 0; pass < 20; pass++) {
		const report = await flushOutboxOnce(host);
		done += report.done;
		if (report.done === 0 || !report.more) break;
	}
	return done;
}

/**
 * The records due now, taken for another ledger's message (records-queued.ts,
 * takeRecords; issue 49), read in the caller's synchronous step right after
 * its write. None while a coupon claim or release is due: its reward's
 * projection waits for the code, as in this ledger's own flush.
 */
export function carryRecords(host: FlushHost): ProjectionMessage | null {
	const now = Date.now();
	const due = host.sql
		.exec<LedgerOutboxEntry>(
			`SELECT * FROM outbox WHERE next_attempt_at <= ? AND ${NOT_HELD_SQL} ORDER BY id LIMIT ?`,
			now,
			host.inFlight?.heldJson(now) ?? NO_HOLDS,
			BATCH,
		)
		.toArray();
	if (due.some(isCouponEntry)) return null;
	return takeRecords(
		host,
		due.filter((e) => e.kind === "projection" || e.kind === "webhook" || e.kind === "audit"),
	);
}

/** The entries waiting in the outbox, as a subquery for the FlushSchedule's one read of what is due. */
export const OUTBOX_PENDING_SQL = "SELECT COUNT(*) FROM outbox";
/**
 * An outbox entry is not held for the projection queue's acknowledgement
 * (in-flight.ts): its one parameter is the JSON of the held [id, ref,
 * version] triples; an entry whose version rose since it was sent is not held.
 */
const NOT_HELD_SQL = `NOT EXISTS (SELECT 1 FROM json_each(?) h WHERE h.value ->> 0 = outbox.id AND h.value ->> 1 = outbox.ref
  AND (h.value ->> 2 IS NULL OR outbox.version <= h.value ->> 2))`;
/**
 * The earliest time an outbox entry not held is due (epoch ms; NULL when there is none), as a subquery whose one
 * parameter is the held triples. The outbox has no index on the due time (schema step 9): it holds only what is
 * not yet delivered.
 */
export const OUTBOX_DUE_SQL = `SELECT next_attempt_at FROM outbox WHERE ${NOT_HELD_SQL} ORDER BY next_attempt_at LIMIT 1`;
