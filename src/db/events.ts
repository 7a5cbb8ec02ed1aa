import { z } from "zod";
import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import { sendsRewardEmail } from "../domain/messages";
import { FRAUD_SIGNALS, type SignalFacts } from "../fraud/signals";
import type { OwnedGrant } from "../rewards/rules";
import { ACTIVE_RULE, type Campaign, type CampaignRow, type RewardRule, type RuleRow, toCampaign, toRule } from "./campaigns";
import { type SignalFactsRow, signalFactsLookup, toSignalFacts } from "./identifiers";
import { firstRowOf, rowsOf } from "./rows";
import { CONVERTED_FRIEND, conversionCounters } from "./stats";
import { parseStoredJson } from "./stored-json";
import { toUser, USER_VIEW, type User, type UserRow } from "./users";

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

/** What deciding an event needs: the stored event when the customid is known, its user, referrer, campaign and active rules. */
export type EventContext =
	| {
			ok: true;
			stored: StoredEvent | null;
			user: User;
			referrer: User | null;
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

const toDecision = (text: string): OwnedGrant[] => parseStoredJson("conversion_events", "decision", text, decisionJson);

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
	decision: row.decision === null ? null : toDecision(row.decision),
});

/**
 * Reads, in one D1 round trip, what deciding an event needs: the event
 * already stored under (app, customid) if any, its user (the stored event's,
 * else the caller's), the user's referrer, the campaign (the stored event's,
 * else the one asked for, else the user's) and its active rules.
 */
export async function readEventContext(db: D1Database, input: EventInput): Promise<EventContext> {
	const stored = "(SELECT userid FROM conversion_events WHERE appid = ?1 AND customid = ?2)";
	const userid = `COALESCE(${stored}, (SELECT userid FROM users WHERE appid = ?1 AND userkey = ?3))`;
	const campaignid = `COALESCE((SELECT campaignid FROM conversion_events WHERE appid = ?1 AND customid = ?2), ?4,
		(SELECT campaignid FROM users WHERE userid = ${userid}))`;
	const args = [input.appid, input.customid, input.userkey, input.campaignid];
	const referrerid = `(SELECT referrer_userid FROM users WHERE userid = ${userid})`;
	// A test twin reads its live app's campaigns (docs/test-mode.md); found by the apps primary key, in the same statement.
	const campaignApp = "(SELECT COALESCE(live_appid, appid) FROM apps WHERE appid = ?1)";
	const [eventResult, userResult, referrerResult, campaignResult, rulesResult, factsResult, firstResult] = await db.batch([
		db.prepare(STORED_EVENT).bind(input.appid, input.customid),
		db.prepare(`${USER_VIEW} WHERE u.userid = ${userid}`).bind(...args.slice(0, 3)),
		db.prepare(`${USER_VIEW} WHERE u.userid = (SELECT referrer_userid FROM users WHERE userid = ${userid})`).bind(...args.slice(0, 3)),
		db.prepare(`SELECT * FROM campaigns WHERE campaignid = ${campaignid} AND appid = ${campaignApp}`).bind(...args),
		db
			.prepare(
				`SELECT r.* FROM reward_rules r JOIN campaigns c USING (campaignid) WHERE r.campaignid = ${campaignid} AND c.appid = ${campaignApp}
				   AND r.${ACTIVE_RULE} ORDER BY r.position`,
			)
			.bind(...args),
		// In the same round trip, though only events of referred users need them.
		signalFactsLookup(db, userid, referrerid, args.slice(0, 3)),
		// Recurring windows start at the friend's first event of the name: one seek of conversion_events_first (migration 0024).
		db
			.prepare(
				`SELECT (SELECT timezone FROM apps WHERE appid = ?1) AS timezone, (SELECT emailsender FROM apps WHERE appid = ?1) AS emailsender,
				   (SELECT COALESCE(webhookurl, '') <> '' FROM apps WHERE appid = ?1) AS webhooks,
				   (SELECT MIN(created_at) FROM conversion_events WHERE userid = ${userid} AND campaignid = ${campaignid}
				      AND lower(trim(eventname)) = lower(trim(?5))) AS first_at`,
			)
			.bind(...args, input.eventname),
	]);
	const eventRow = firstRowOf<EventRow>(eventResult);
	const userRow = firstRowOf<UserRow>(userResult);
	const campaignRow = firstRowOf<CampaignRow>(campaignResult);
	if (!userRow) return { ok: false, reason: "user_not_found" };
	if (!campaignRow) return { ok: false, reason: "campaign_not_found" };
	const referrerRow = firstRowOf<UserRow>(referrerResult);
	const first = firstRowOf<{ timezone: string | null; emailsender: string | null; webhooks: number | null; first_at: string | null }>(
		firstResult,
	);
	const campaign = toCampaign(campaignRow);
	return {
		ok: true,
		stored: eventRow ? toStoredEvent(eventRow) : null,
		user: toUser(userRow),
		referrer: referrerRow ? toUser(referrerRow) : null,
		campaign,
		rules: rowsOf<RuleRow>(rulesResult).map(toRule),
		facts: toSignalFacts(firstRowOf<SignalFactsRow>(factsResult)),
		firstEventAt: first?.first_at ?? null,
		timezone: first?.timezone ?? "UTC",
		rewardemail: sendsRewardEmail(campaign.rewardemail ?? "auto", first?.emailsender ?? null),
		webhooks: first?.webhooks === 1,
	};
}

/**
 * Records the event once per (app, customid) with its decision, marked as
 * waiting for its grants (db/event-grants.ts), in one D1 batch (a transaction): the guarded insert, the friend's move to
 * `Converted` (counted once on the referrer) and the stored event read back.
 * When another call recorded the customid first, its event and decision win.
 */
export async function insertEvent(
	db: D1Database,
	input: EventInput & { campaignid: number; userid: number },
	decision: OwnedGrant[],
	createdAt = nowIso(),
): Promise<{ isNew: boolean; event: StoredEvent }> {
	const conversionId = newEventId();
	const eventOf = "(SELECT userid FROM conversion_events WHERE appid = ?1 AND customid = ?2)";
	const [insert, , , read] = await db.batch([
		db
			.prepare(
				`INSERT INTO conversion_events (appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at,
				   decision, grants_pending, productid, category)
				 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11, ?12) ON CONFLICT (appid, customid) DO NOTHING`,
			)
			.bind(
				input.appid,
				input.customid,
				input.userid,
				input.eventname,
				input.transactionvalue,
				input.extrainfo,
				input.campaignid,
				input.growthhack,
				createdAt,
				JSON.stringify(decision),
				input.productid ?? null,
				input.category ?? null,
			),
		// The friend converts on its first event not named Signup; the token makes the referrer's counter move once.
		db
			.prepare(
				`UPDATE users SET status = 'Converted', conversion_id = ?3, updated_at = ?4
				 WHERE userid = ${eventOf} AND status = 'SignUp' AND referrer_userid IS NOT NULL
				   AND lower(trim((SELECT eventname FROM conversion_events WHERE appid = ?1 AND customid = ?2))) <> 'signup'`,
			)
			.bind(input.appid, input.customid, conversionId, createdAt),
		db
			.prepare(
				`UPDATE users SET converted_friends_count = converted_friends_count + 1
				 WHERE userid = (SELECT referrer_userid FROM users WHERE ${CONVERTED_FRIEND})`,
			)
			.bind(conversionId, input.appid, input.customid),
		db.prepare(STORED_EVENT).bind(input.appid, input.customid),
		// After the read, so its position stays fixed; they count only when this call converted the friend.
		...conversionCounters(db, conversionId, input.appid, input.customid),
	]);
	if (insert?.meta.changes === 1) {
		// This call's insert: the event is what it wrote (its decision need not be parsed back from JSON).
		const { customid, userkey, eventname, transactionvalue, extrainfo, campaignid, growthhack } = input;
		return {
			isNew: true,
			event: { customid, userkey, eventname, transactionvalue, extrainfo, campaignid, growthhack, createdAt, decision },
		};
	}
	const row = firstRowOf<EventRow>(read);
	if (!row) throw new Error("conversion event not readable after its insert");
	return { isNew: false, event: toStoredEvent(row) };
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
