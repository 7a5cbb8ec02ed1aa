import { z } from "zod";
import { newEventId } from "../domain/ids";
import { FRAUD_SIGNALS, type SignalFacts } from "../fraud/signals";
import type { OwnedGrant } from "../rewards/rules";
import type { Campaign, RewardRule } from "./campaigns";
import { CONVERTED_FRIEND, conversionCounters } from "./stats";
import { parseStoredJson } from "./stored-json";
import type { ConversionUser } from "./user-profile";

export interface EventInput {
	appid: string;
	userkey: string;
	customid: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number | null;
	growthhack: string;
	/** What was bought (docs/rewards.md, "Products and categories"); absent for events that name none. */
	productid?: string | null;
	category?: string | null;
}

export interface StoredEvent {
	customid: string;
	/** The user the event was recorded for: a customid is one event of one user. */
	userkey: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number;
	growthhack: string;
	createdAt: string;
	/** The rewards it earns, frozen at its first recording; null for events recorded before decisions were kept. */
	decision: OwnedGrant[] | null;
}

/** What deciding an event needs: its user, referrer, campaign and active rules (operations/conversion-context.ts). */
export type EventContext =
	| {
			ok: true;
			/** From the user's ledger (operations/conversion-parties.ts, issue 49), or D1 once for a ledger without it. */
			user: ConversionUser;
			referrer: ConversionUser | null;
			campaign: Campaign;
			rules: RewardRule[];
			/** What the fraud checks compare between the user and its referrer (docs/fraud.md). */
			facts: SignalFacts;
			/** When the user's first event of this name in the campaign was recorded (ISO); null: none yet (recurring windows). */
			firstEventAt: string | null;
			/** The app's IANA time zone (recurring windows count its calendar months). */
			timezone: string;
			/** Whether the campaign sends the reward-earned email (docs/messages.md), read in the same round trip. */
			rewardemail: boolean;
			/**
			 * Whether the app has a webhook endpoint now (both modes post to the one URL, which a test twin keeps a
			 * copy of: docs/test-mode.md), read in the same round trip: the ledgers queue no `reward.created` entry
			 * for an app without one (docs/webhooks.md).
			 */
			webhooks: boolean;
			/** Whether the app has events recorded in D1 before the event gate (migration 0045): a gate miss then asks D1. */
			legacy: boolean;
	  }
	| { ok: false; reason: "user_not_found" | "campaign_not_found" };

interface EventRow {
	customid: string;
	userkey: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number;
	growthhack: string;
	created_at: string;
	decision: string | null;
}

/**
 * `conversion_events.decision`: the OwnedGrant list (rewards/rules.ts) frozen
 * at the event's first recording. Keys this code does not know are kept, so
 * the grants reach the ledgers exactly as they were stored.
 */
const decisionJson = z.array(
	z.looseObject({
		owner: z.enum(["friend", "referrer"]),
		grant: z.looseObject({
			key: z.string(),
			ruleid: z.number(),
			rewardfrequency: z.number(),
			usertype: z.enum(["Friend", "Referrer"]),
			amount: z.number(),
			rewardunit: z.string(),
			rewardtype: z.enum(["InstoreCredits", "Coupon", "Stripe"]),
			campaignid: z.number(),
			campaignname: z.string(),
			growthhack: z.string(),
			eventname: z.string(),
			customid: z.string(),
			friend: z.looseObject({
				userkey: z.string(),
				email: z.string().nullable(),
				name: z.string().nullable(),
				profileimage: z.string().nullable(),
			}),
			fraudsignals: z.array(z.enum(FRAUD_SIGNALS)).optional(),
			status: z.enum(["Approved", "UnderReview", "Suspicious"]),
			holdUntil: z.string().nullable(),
			comment: z.string().nullable(),
			percent: z.boolean().optional(),
		}),
	}),
);

/** A stored decision, parsed with its schema; `table` names where it was read (D1's events, or the event gate's). */
export const parseDecision = (text: string, table = "conversion_events"): OwnedGrant[] =>
	parseStoredJson(table, "decision", text, decisionJson);

/** The event stored under (app ?1, customid ?2) with its user's key. */
const STORED_EVENT = `SELECT e.*, u.userkey FROM conversion_events e JOIN users u ON u.userid = e.userid
	WHERE e.appid = ?1 AND e.customid = ?2`;

const toStoredEvent = (row: EventRow): StoredEvent => ({
	customid: row.customid,
	userkey: row.userkey,
	eventname: row.eventname,
	transactionvalue: row.transactionvalue,
	extrainfo: row.extrainfo,
	campaignid: row.campaignid,
	growthhack: row.growthhack,
	createdAt: row.created_at,
	decision: row.decision === null ? null : parseDecision(row.decision),
});

/**
 * When the user's first event of this name in the campaign was recorded (ISO), or null: one seek of
 * conversion_events_first (migration 0024), read for recurring windows only (operations/conversion-context.ts).
 * D1's rows lag the gate by the projection (seconds): an event within that lag of the friend's first sees a later
 * first or none, which moves its window's start by those seconds; only an event at the very end of a window of
 * months could land on the other side, and by then D1 holds the first (docs/scaling.md, "Conversions without D1").
 */
export async function firstEventAt(
	db: D1Database,
	appid: string,
	userkey: string,
	campaignid: number,
	eventname: string,
): Promise<string | null> {
	const row = await db
		.prepare(
			`SELECT MIN(created_at) AS first_at FROM conversion_events
			 WHERE userid = (SELECT userid FROM users WHERE appid = ?1 AND userkey = ?2) AND campaignid = ?3
			   AND lower(trim(eventname)) = lower(trim(?4))`,
		)
		.bind(appid, userkey, campaignid, eventname)
		.first<{ first_at: string | null }>();
	return row?.first_at ?? null;
}

/** A stored event with its app and what was bought (the gate keeps events so: ledger/event-gate.ts). */
export type StoredEventWithApp = StoredEvent & { appid: string; productid: string | null; category: string | null };
type StoredEventRow = EventRow & { appid: string; productid: string | null; category: string | null };
const withApp = (row: StoredEventRow): StoredEventWithApp => ({
	...toStoredEvent(row),
	appid: row.appid,
	productid: row.productid,
	category: row.category,
});

/** The event stored in D1 under (app, customid), or null (the gate's read of an event from before it). */
export async function findStoredEvent(db: D1Database, appid: string, customid: string): Promise<StoredEventWithApp | null> {
	const row = await db.prepare(STORED_EVENT).bind(appid, customid).first<StoredEventRow>();
	return row ? withApp(row) : null;
}

/** The stored events a statement of db/ selects (`e.*, u.userkey`, as STORED_EVENT does). */
export async function findStoredEventRows(statement: D1PreparedStatement, args: unknown[]): Promise<StoredEventWithApp[]> {
	const { results } = await statement.bind(...args).all<StoredEventRow>();
	return results.map(withApp);
}

/**
 * D1's copy of a conversion event (admin lists, exports, stats, refunds'
 * lookup, erasure), written by the projection of its `conversion.recorded`
 * entry (db/projection-batch.ts, ledger/outbox.ts), which the announcing
 * ledger writes once every grant of the event is done: the event row (not
 * for an erased user: its event is refused, and a late message must not
 * bring the person back), the friend's move to `Converted` (counted once on
 * the referrer) and the stats counters, the statements `insertEvent` ran on
 * the request path before issue 49. Each is idempotent: the row by its key,
 * the move by the friend's status, the counters by the token of the move.
 */
export function recordedEventStatements(db: D1Database, appid: string, event: RecordedEvent): D1PreparedStatement[] {
	const conversionId = newEventId();
	const eventOf = "(SELECT userid FROM conversion_events WHERE appid = ?1 AND customid = ?2)";
	return [
		db
			.prepare(
				`INSERT INTO conversion_events (appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at,
				   productid, category)
				 SELECT ?1, ?2, u.userid, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM users u WHERE u.appid = ?1 AND u.userkey = ?3 AND u.erased_at IS NULL
				 ON CONFLICT (appid, customid) DO NOTHING`,
			)
			.bind(
				appid,
				event.customid,
				event.userkey,
				event.eventname,
				event.transactionvalue,
				event.extrainfo,
				event.campaignid,
				event.growthhack,
				event.recordedat,
				event.productid,
				event.category,
			),
		// The friend converts on its first event not named Signup; the token makes the referrer's counter move once.
		db
			.prepare(
				`UPDATE users SET status = 'Converted', conversion_id = ?3, updated_at = ?4
				 WHERE userid = ${eventOf} AND status = 'SignUp' AND referrer_userid IS NOT NULL
				   AND lower(trim((SELECT eventname FROM conversion_events WHERE appid = ?1 AND customid = ?2))) <> 'signup'`,
			)
			.bind(appid, event.customid, conversionId, event.recordedat),
		db
			.prepare(
				`UPDATE users SET converted_friends_count = converted_friends_count + 1
				 WHERE userid = (SELECT referrer_userid FROM users WHERE ${CONVERTED_FRIEND})`,
			)
			.bind(conversionId, appid, event.customid),
		...conversionCounters(db, conversionId, appid, event.customid),
	];
}

/** What D1's copy of an event takes from its `conversion.recorded` payload (docs/webhooks.md). */
export interface RecordedEvent {
	customid: string;
	userkey: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number;
	growthhack: string;
	recordedat: string;
	productid: string | null;
	category: string | null;
}

const recordedPayload = z.looseObject({
	customid: z.string(),
	userkey: z.string(),
	eventname: z.string(),
	transactionvalue: z.number().nullable(),
	extrainfo: z.string().nullable().optional(),
	campaignid: z.number(),
	growthhack: z.string(),
	recordedat: z.string(),
	productid: z.string().optional(),
	category: z.string().optional(),
});

/** The event of a `conversion.recorded` payload, or null for a payload without its fields (a hand-made or redacted one). */
export function recordedEventOf(payload: Record<string, unknown>): RecordedEvent | null {
	const parsed = recordedPayload.safeParse(payload);
	if (!parsed.success) return null;
	const { extrainfo, ...rest } = parsed.data;
	// The webhook payload says "" for no free text (conversion-grants.ts); D1 keeps NULL as it did.
	return {
		customid: rest.customid,
		userkey: rest.userkey,
		eventname: rest.eventname,
		transactionvalue: rest.transactionvalue,
		extrainfo: extrainfo === "" || extrainfo === undefined ? null : extrainfo,
		campaignid: rest.campaignid,
		growthhack: rest.growthhack,
		recordedat: rest.recordedat,
		productid: rest.productid ?? null,
		category: rest.category ?? null,
	};
}

/** A recorded event as a refund needs it: its value and whose ledgers its rewards went to. */
export interface EventParties {
	customid: string;
	eventname: string;
	transactionvalue: number | null;
	growthhack: string;
	friendUserkey: string;
	/** The friend's referrer, whose ledger holds the Referrer rewards; null when it has none. */
	referrerUserkey: string | null;
}

type EventPartiesRow = {
	customid: string;
	eventname: string;
	transactionvalue: number | null;
	growthhack: string;
	friend_userkey: string;
	referrer_userkey: string | null;
};

/** The event `customid` of the app with its friend and referrer, or null when there is none (one D1 read). */
export async function findEventParties(db: D1Database, appid: string, customid: string): Promise<EventParties | null> {
	const row = await db
		.prepare(
			`SELECT e.customid, e.eventname, e.transactionvalue, e.growthhack, u.userkey AS friend_userkey, r.userkey AS referrer_userkey
			 FROM conversion_events e JOIN users u ON u.userid = e.userid LEFT JOIN users r ON r.userid = u.referrer_userid
			 WHERE e.appid = ? AND e.customid = ?`,
		)
		.bind(appid, customid)
		.first<EventPartiesRow>();
	if (!row) return null;
	return {
		customid: row.customid,
		eventname: row.eventname,
		transactionvalue: row.transactionvalue,
		growthhack: row.growthhack,
		friendUserkey: row.friend_userkey,
		referrerUserkey: row.referrer_userkey,
	};
}

/**
 * The parties of an event the gate holds and D1 does not yet (its projection lags the answer by seconds: issue 49), so
 * a refund right after its conversion finds it: the friend as the gate recorded it, its referrer from D1's user row.
 */
export async function partiesOfClaimedEvent(
	db: D1Database,
	appid: string,
	event: Pick<StoredEvent, "customid" | "eventname" | "transactionvalue" | "growthhack" | "userkey">,
): Promise<EventParties> {
	const row = await db
		.prepare(
			`SELECT r.userkey AS referrer_userkey FROM users u LEFT JOIN users r ON r.userid = u.referrer_userid
			 WHERE u.appid = ? AND u.userkey = ?`,
		)
		.bind(appid, event.userkey)
		.first<{ referrer_userkey: string | null }>();
	return {
		customid: event.customid,
		eventname: event.eventname,
		transactionvalue: event.transactionvalue,
		growthhack: event.growthhack,
		friendUserkey: event.userkey,
		referrerUserkey: row?.referrer_userkey ?? null,
	};
}
