import { z } from "zod";
import { FRAUD_SIGNALS, type FraudSignal } from "../fraud/signals";
import { parseStoredJson } from "./stored-json";

/** Admin reads of the rewards projection (written by the ledgers' outbox). */

export interface ProjectedRewardRow {
	rewarddtlid: string;
	userkey: string;
	campaignid: number;
	eventname: string;
	usertype: string;
	reward: number;
	rewardunit: string;
	rewardtype: string;
	rewardstatus: string;
	redeemed: number;
	comment: string | null;
	friend_userkey: string | null;
	created_at: string;
	updated_at: string;
	/** The reward's owner, and its referrer (who referred the owner), for the review queue. */
	owner_email: string | null;
	owner_name: string | null;
	owner_referrer_userkey: string | null;
	owner_referrer_email: string | null;
	owner_referrer_name: string | null;
	/** The friend of a referrer's reward. */
	friend_email: string | null;
	friend_name: string | null;
	fraudsignals: string;
	/** A Stripe reward's payout (docs/stripe.md): the balance transaction, and pending / waiting_customer / failed / paid. */
	payoutid: string | null;
	payout_state: string | null;
}

export interface PersonRef {
	userkey: string;
	email: string | null;
	name: string | null;
}

const signalsJson = z.array(z.enum(FRAUD_SIGNALS));

/** Who referred whom for one reward: a Friend reward's owner is the friend, a Referrer reward's owner the referrer. */
export function rewardPeople(row: ProjectedRewardRow): {
	friend: PersonRef | null;
	referrer: PersonRef | null;
	fraudsignals: FraudSignal[];
} {
	const owner = { userkey: row.userkey, email: row.owner_email, name: row.owner_name };
	const friendOfReferrer = row.friend_userkey ? { userkey: row.friend_userkey, email: row.friend_email, name: row.friend_name } : null;
	const referrerOfFriend = row.owner_referrer_userkey
		? { userkey: row.owner_referrer_userkey, email: row.owner_referrer_email, name: row.owner_referrer_name }
		: null;
	return {
		friend: row.usertype === "Friend" ? owner : friendOfReferrer,
		referrer: row.usertype === "Friend" ? referrerOfFriend : owner,
		fraudsignals: parseStoredJson("rewards", "fraudsignals", row.fraudsignals, signalsJson),
	};
}

export interface RewardFilter {
	appid: string;
	statuses: string[];
	campaignid: number | null;
	userkey: string | null;
	/** One reward by its id (the primary key): the reward's own page. */
	rewarddtlid?: string | null;
	/** ISO bounds on created_at: from inclusive, to exclusive. */
	from: string | null;
	to: string | null;
	/** Keyset: (created_at, rewarddtlid) of the last row of the previous page. */
	after: [string, string] | null;
	limit: number;
}

/** The WHERE clause and arguments of a rewards filter (the rewards table aliased `r`), without its LIMIT. */
export function rewardFilterSql(f: RewardFilter): { where: string; args: (string | number)[] } {
	const where = ["r.appid = ?"];
	const args: (string | number)[] = [f.appid];
	const add = (clause: string, ...values: (string | number)[]) => {
		where.push(clause);
		args.push(...values);
	};
	if (f.statuses.length > 0) add(`r.rewardstatus IN (${f.statuses.map(() => "?").join(", ")})`, ...f.statuses);
	if (f.campaignid !== null) add("r.campaignid = ?", f.campaignid);
	if (f.userkey !== null) add("r.userkey = ?", f.userkey);
	if (f.rewarddtlid) add("r.rewarddtlid = ?", f.rewarddtlid);
	if (f.from !== null) add("r.created_at >= ?", f.from);
	if (f.to !== null) add("r.created_at < ?", f.to);
	if (f.after !== null) add("(r.created_at, r.rewarddtlid) < (?, ?)", ...f.after);
	return { where: where.join(" AND "), args };
}

/** The projection's columns of a reward (the rewards table aliased `r`). */
export const REWARD_COLUMNS = `r.rewarddtlid, r.userkey, r.campaignid, r.eventname, r.usertype, r.reward, r.rewardunit, r.rewardtype,
  r.rewardstatus, r.redeemed, r.comment, r.friend_userkey, r.created_at, r.updated_at, r.fraudsignals, r.payoutid, r.payout_state`;

/** Rewards of the app matching the filter, newest first (an app in the "one" layout: db/rewards-shards.ts reads the others). */
export async function listRewards(db: D1Database, f: RewardFilter): Promise<ProjectedRewardRow[]> {
	const { where, args } = rewardFilterSql(f);
	const { results } = await db
		.prepare(
			`SELECT ${REWARD_COLUMNS},
			 o.email AS owner_email, o.name AS owner_name, p.userkey AS owner_referrer_userkey, p.email AS owner_referrer_email,
			 p.name AS owner_referrer_name, f.email AS friend_email, f.name AS friend_name
			 FROM rewards r
			 LEFT JOIN users o ON o.userkey = r.userkey
			 LEFT JOIN users p ON p.userid = o.referrer_userid
			 LEFT JOIN users f ON f.userkey = r.friend_userkey
			 WHERE ${where} ORDER BY r.created_at DESC, r.rewarddtlid DESC LIMIT ?`,
		)
		.bind(...args, f.limit)
		.all<ProjectedRewardRow>();
	return results;
}

const eventRow = z.object({
	customid: z.string(),
	userkey: z.string(),
	eventname: z.string(),
	transactionvalue: z.number().nullable(),
	created_at: z.string(),
});
const paymentRow = z.object({
	invoice: z.string().nullable(),
	payment_intent: z.string().nullable(),
	charge: z.string().nullable(),
	checkout_session: z.string().nullable(),
	currency: z.string(),
	amount_minor: z.number(),
	refunded_minor: z.number(),
});
/** The conversion a reward was granted for, as the reward's page shows it. */
export type RewardEventRow = z.output<typeof eventRow>;
/** The Stripe payment behind a conversion (migration 0017's stripe_links), in Stripe's minor units. */
export type RewardPaymentRow = z.output<typeof paymentRow>;

/**
 * The event behind a reward (by its order id, `customid`) and, for a Stripe conversion, its payment: one round
 * trip, each a seek of a unique (appid, customid) key. Either is null when there is none (a milestone's reward,
 * an event erased with its user, a conversion not made by Stripe).
 */
export async function rewardOrigin(
	db: D1Database,
	appid: string,
	customid: string,
): Promise<{ event: RewardEventRow | null; payment: RewardPaymentRow | null }> {
	const [events, payments] = await db.batch([
		db
			.prepare(
				`SELECT e.customid, u.userkey, e.eventname, e.transactionvalue, e.created_at FROM conversion_events e
				 JOIN users u ON u.userid = e.userid WHERE e.appid = ? AND e.customid = ?`,
			)
			.bind(appid, customid),
		db
			.prepare(
				`SELECT invoice, payment_intent, charge, checkout_session, currency, amount_minor, refunded_minor FROM stripe_links
				 WHERE appid = ? AND customid = ?`,
			)
			.bind(appid, customid),
	]);
	const event = events?.results[0];
	const payment = payments?.results[0];
	return { event: event ? eventRow.parse(event) : null, payment: payment ? paymentRow.parse(payment) : null };
}
