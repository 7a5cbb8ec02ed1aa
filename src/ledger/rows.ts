import { formatDayMonthYear } from "../domain/dates";
import { rewardId } from "../domain/ledger-ids";
import { formatAmount, fromHundredths } from "../rewards/money";
import type { RewardRow } from "./schema";
import { fraudSignalsSchema, readLedgerJson } from "./stored-json";
import type { LedgerReward, RewardView } from "./types";

/** The columns toView reads: what a page of rewards selects, so its rows carry no others (each is built by the runtime). */
export const VIEW_COLUMNS =
	"seq, status, comment, eventname, amount, reversed, rewardunit, rewarded_at, created_at, rewardtype, usertype, coupon, couponimage, " +
	"coupondetails, couponname, campaignid, campaignname, growthhack, friend_email, friend_name, friend_profileimage, fraudsignals, payoutid";
export type ViewRow = Pick<
	RewardRow,
	| "seq"
	| "status"
	| "comment"
	| "eventname"
	| "amount"
	| "reversed"
	| "rewardunit"
	| "rewarded_at"
	| "created_at"
	| "rewardtype"
	| "usertype"
	| "coupon"
	| "couponimage"
	| "coupondetails"
	| "couponname"
	| "campaignid"
	| "campaignname"
	| "growthhack"
	| "friend_email"
	| "friend_name"
	| "friend_profileimage"
	| "fraudsignals"
	| "payoutid"
>;

/**
 * A reward as the public API shows it. `rewardedon` is the day it was paid
 * out when Rewarded, else the day it was earned, so every reward has a date.
 * `reward` is what the reward is worth now: the amount granted minus what
 * refunds took back (`reversedamount`).
 */
export function toView(userkey: string, row: ViewRow): RewardView {
	return {
		rewarddtlid: rewardId(userkey, row.seq),
		rewardstatus: row.status,
		comment: row.comment ?? "",
		eventname: row.eventname,
		reward: formatAmount(row.amount - row.reversed),
		rewardunit: row.rewardunit,
		rewardedon: formatDayMonthYear(row.rewarded_at ?? row.created_at),
		rewardtype: row.rewardtype,
		usertype: row.usertype,
		coupon: row.coupon ?? "",
		couponimage: row.couponimage ?? "",
		coupondetails: row.coupondetails ?? "",
		couponname: row.couponname ?? "",
		campaignid: String(row.campaignid),
		campaignname: row.campaignname,
		growthhack: row.growthhack,
		friendemail: row.friend_email ?? "",
		friendname: row.friend_name ?? "",
		friendprofileimage: row.friend_profileimage ?? "",
		fraudsignals: readLedgerJson("rewards", "fraudsignals", row.fraudsignals ?? "[]", fraudSignalsSchema),
		reversed: row.reversed > 0,
		reversedamount: formatAmount(row.reversed),
		payoutid: row.payoutid ?? "",
	};
}

/** A reward with the ledger's bookkeeping. */
export function toLedgerReward(userkey: string, row: RewardRow): LedgerReward {
	return {
		...toView(userkey, row),
		key: row.key,
		friendUserkey: row.friend_userkey,
		amount: fromHundredths(row.amount),
		redeemed: fromHundredths(row.redeemed),
		reversedAmount: fromHundredths(row.reversed),
		settled: fromHundredths(row.settled),
		createdAt: row.created_at,
		updatedAt: row.updated_at,
		holdUntil: row.hold_until,
		rewardedAt: row.rewarded_at,
		version: row.version,
	};
}

/** A reward as the `conversion.recorded` webhook lists it. */
export function rewardSummary(userkey: string, reward: RewardView) {
	return {
		rewarddtlid: reward.rewarddtlid,
		userkey,
		usertype: reward.usertype,
		reward: reward.reward,
		rewardunit: reward.rewardunit,
		rewardtype: reward.rewardtype,
		rewardstatus: reward.rewardstatus,
		fraudsignals: reward.fraudsignals,
	};
}
