import { nowIso } from "../domain/dates";
import { newEventId } from "../domain/ids";
import { type Campaign, type CampaignRow, type RewardRule, type RuleRow, toCampaign, toRule } from "./campaigns";
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
}

export interface StoredEvent {
	customid: string;
	eventname: string;
	transactionvalue: number | null;
	extrainfo: string | null;
	campaignid: number;
	growthhack: string;
	createdAt: string;
}

export type RecordOutcome =
	| { ok: true; isNew: boolean; event: StoredEvent; user: User; referrer: User | null; campaign: Campaign; rules: RewardRule[] }
	| { ok: false; reason: "user_not_found" | "campaign_not_found" | "transactionvalue_required" };

interface EventRow extends Omit<StoredEvent, "createdAt"> {
	created_at: string;
	userid: number;
}

/**
 * Records a conversion event once per (app, customid) and reads everything
 * rewarding it needs, in ONE D1 round trip (a batch is one transaction):
 * the guarded insert, the stored event (new or earlier), its user and
 * referrer, the friend's move to `Converted` (counted once on the referrer),
 * and the campaign with its rules. A replay reads the stored event, not the
 * request, so a retry rewards exactly what the first call did.
 */
export async function recordConversionEvent(db: D1Database, input: EventInput): Promise<RecordOutcome> {
	const conversionId = newEventId();
	const now = nowIso();
	const eventOf = "(SELECT userid FROM conversion_events WHERE appid = ?1 AND customid = ?2)";
	const eventCampaign = "(SELECT campaignid FROM conversion_events WHERE appid = ?1 AND customid = ?2)";
	const [insert, eventResult, userResult, referrerResult, , , campaignResult, rulesResult, diagnosis] = await db.batch([
		db
			.prepare(
				`INSERT INTO conversion_events (appid, customid, userid, eventname, transactionvalue, extrainfo, campaignid, growthhack, created_at)
				 SELECT ?1, ?2, u.userid, ?4, ?5, ?6, COALESCE(?7, u.campaignid), ?8, ?9 FROM users u
				 WHERE u.appid = ?1 AND u.userkey = ?3
				   AND (?7 IS NULL OR EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ?7 AND appid = ?1))
				   AND (?5 IS NOT NULL OR NOT EXISTS (SELECT 1 FROM reward_rules r WHERE r.campaignid = COALESCE(?7, u.campaignid)
				        AND trim(r.rewardunit) = '%' AND lower(trim(r.eventname)) = lower(trim(?4))))
				 ON CONFLICT (appid, customid) DO NOTHING`,
			)
			.bind(
				input.appid,
				input.customid,
				input.userkey,
				input.eventname,
				input.transactionvalue,
				input.extrainfo,
				input.campaignid,
				input.growthhack,
				now,
			),
		db.prepare("SELECT * FROM conversion_events WHERE appid = ?1 AND customid = ?2").bind(input.appid, input.customid),
		db.prepare(`${USER_VIEW} WHERE u.userid = ${eventOf}`).bind(input.appid, input.customid),
		db
			.prepare(`${USER_VIEW} WHERE u.userid = (SELECT referrer_userid FROM users WHERE userid = ${eventOf})`)
			.bind(input.appid, input.customid),
		// The friend converts on its first event not named Signup; the token makes the referrer's counter move once.
		db
			.prepare(
				`UPDATE users SET status = 'Converted', conversion_id = ?3, updated_at = ?4
				 WHERE userid = ${eventOf} AND status = 'SignUp' AND referrer_userid IS NOT NULL
				   AND lower(trim((SELECT eventname FROM conversion_events WHERE appid = ?1 AND customid = ?2))) <> 'signup'`,
			)
			.bind(input.appid, input.customid, conversionId, now),
		db
			.prepare(
				`UPDATE users SET converted_friends_count = converted_friends_count + 1
				 WHERE userid = (SELECT referrer_userid FROM users WHERE conversion_id = ?1)`,
			)
			.bind(conversionId),
		db.prepare(`SELECT * FROM campaigns WHERE campaignid = ${eventCampaign} AND appid = ?1`).bind(input.appid, input.customid),
		db.prepare(`SELECT * FROM reward_rules WHERE campaignid = ${eventCampaign} ORDER BY position`).bind(input.appid, input.customid),
		db
			.prepare(
				`SELECT EXISTS (SELECT 1 FROM users WHERE appid = ?1 AND userkey = ?2) AS userfound,
				 (?3 IS NULL OR EXISTS (SELECT 1 FROM campaigns WHERE campaignid = ?3 AND appid = ?1)) AS campaignfound`,
			)
			.bind(input.appid, input.userkey, input.campaignid),
	]);
	const eventRow = eventResult?.results[0] as EventRow | undefined;
	const userRow = userResult?.results[0] as UserRow | undefined;
	const campaignRow = campaignResult?.results[0] as CampaignRow | undefined;
	if (!eventRow || !userRow || !campaignRow) {
		const why = diagnosis?.results[0] as { userfound: number; campaignfound: number };
		if (!why.userfound) return { ok: false, reason: "user_not_found" };
		if (!why.campaignfound) return { ok: false, reason: "campaign_not_found" };
		return { ok: false, reason: "transactionvalue_required" };
	}
	const referrerRow = referrerResult?.results[0] as UserRow | undefined;
	return {
		ok: true,
		isNew: insert?.meta.changes === 1,
		event: {
			customid: eventRow.customid,
			eventname: eventRow.eventname,
			transactionvalue: eventRow.transactionvalue,
			extrainfo: eventRow.extrainfo,
			campaignid: eventRow.campaignid,
			growthhack: eventRow.growthhack,
			createdAt: eventRow.created_at,
		},
		user: toUser(userRow),
		referrer: referrerRow ? toUser(referrerRow) : null,
		campaign: toCampaign(campaignRow),
		rules: ((rulesResult?.results ?? []) as unknown as RuleRow[]).map(toRule),
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
