import type { OutboxEvent } from "../domain/outbox-event";
import { type D1FriendRow, FRIEND_COLUMNS } from "./friends-fill";
import { allOf, appHasWebhook, insertOutboxEvent } from "./outbox-events";
import { firstRowOf } from "./rows";
import { lateAttributionCounter } from "./stats";
import { type StoredProfile, storedProfileStatements, toStoredProfile } from "./user-profile";
import { attributionHappened, countNewFriend } from "./users";

/**
 * True inside SQL when making ?1 the referrer of ?2 would close a cycle: ?2
 * is ?1 or one of ?1's referrers, however far up.
 */
const CLOSES_CYCLE = `EXISTS (
	WITH RECURSIVE chain(id, depth) AS (
		SELECT ?1, 0
		UNION ALL
		SELECT u.referrer_userid, chain.depth + 1 FROM users u JOIN chain ON u.userid = chain.id
		WHERE u.referrer_userid IS NOT NULL AND chain.depth < 100000
	) SELECT 1 FROM chain WHERE id = ?2)`;

export interface Attribution {
	appid: string;
	userid: number;
	/** The user's and the referrer's keys: their profiles are read back at the end of the batch (issue 49: their ledgers keep them). */
	userkey: string;
	referrerkey: string;
	/** Device ids and IP hashes read back per kind (ledger/profile.ts PROFILE_IDENTIFIERS). */
	identifiersKept: number;
	referrer: { userid: number; campaignid: number };
	/** Names this attribution inside the batch, so the statements after the update can test that it happened. */
	attributionId: string;
	at: string;
	/** `referral.attributed`, recorded only if the attribution happened and the app has a webhook URL. */
	event: OutboxEvent;
}

export type AttributionOutcome =
	/** `profile`: the user as the batch left it, with its referrer and the velocity count fixed now (db/user-profile.ts);
	 * `friend`: the user as the attribution left it (the referrer's ledger keeps it: issue 49 piece 4). */
	| { applied: true; recorded: boolean; profile: StoredProfile | null; referrerProfile: StoredProfile | null; friend: D1FriendRow }
	/** `current`: the referrer the user has now (null: none); `cycle`: the referrer was referred, directly or not, by the user. */
	| { applied: false; current: number | null; cycle: boolean };

/**
 * Sets the user's referrer (and moves it to the referrer's campaign) once:
 * one guarded UPDATE decides, no referrer yet and no cycle, checked and
 * written atomically; in the same batch the referrer's friend count, the
 * webhook event, the diagnosis of a refusal, the late-attribution counter
 * and the user's profile read back.
 */
export async function attributeReferrer(db: D1Database, a: Attribution): Promise<AttributionOutcome> {
	const results = await db.batch([
		db
			.prepare(
				`UPDATE users SET referrer_userid = ?1, campaignid = ?3, attributed_at = ?4, attribution_id = ?5, updated_at = ?4
				 WHERE userid = ?2 AND referrer_userid IS NULL AND NOT ${CLOSES_CYCLE}
				 RETURNING ${FRIEND_COLUMNS}`,
			)
			.bind(a.referrer.userid, a.userid, a.referrer.campaignid, a.at, a.attributionId),
		countNewFriend(db, a.referrer.userid, a.attributionId),
		insertOutboxEvent(db, a.event, allOf(attributionHappened(a.attributionId), appHasWebhook(a.appid))),
		db
			.prepare(`SELECT (SELECT referrer_userid FROM users WHERE userid = ?2) AS current, ${CLOSES_CYCLE} AS cycle`)
			.bind(a.referrer.userid, a.userid),
		lateAttributionCounter(db, a.attributionId),
		// The profile the user's ledger keeps (issue 49), read in this transaction after the write: its velocity count
		// is the friends the referrer got in the hour up to now, fixed from here on (docs/fraud.md).
		...storedProfileStatements(db, a.appid, a.userkey, a.identifiersKept),
		...storedProfileStatements(db, a.appid, a.referrerkey, a.identifiersKept),
	]);
	const [update, , recorded, diagnosis] = results;
	const friend = firstRowOf<D1FriendRow>(update);
	if (update?.meta.changes === 1 && friend)
		return {
			applied: true,
			recorded: recorded?.meta.changes === 1,
			profile: toStoredProfile(results.slice(5, 8), a.identifiersKept),
			referrerProfile: toStoredProfile(results.slice(8, 11), a.identifiersKept),
			friend,
		};
	const why = firstRowOf<{ current: number | null; cycle: number }>(diagnosis);
	if (!why) throw new Error("applyreferrercode's diagnosis returned no row");
	return { applied: false, current: why.current, cycle: why.cycle === 1 };
}
