/**
 * How a user's ledger and its rewards are named. The Worker routes by these
 * names (a reward id carries its owner, so a status read or change goes
 * straight to the right ledger) and the ledger checks them, so they live
 * below both.
 */

/** The Durable Object name of a user's ledger. */
export const ledgerName = (appid: string, userkey: string) => `${appid}:${userkey}`;

/** The (app, user) of a ledger name; user keys never hold `:`, so the last one splits. */
export function parseLedgerName(name: string): { appid: string; userkey: string } | null {
	const at = name.lastIndexOf(":");
	if (at <= 0 || at === name.length - 1) return null;
	return { appid: name.slice(0, at), userkey: name.slice(at + 1) };
}

/** The public id of a reward: its owner's user key and its number in that owner's ledger. */
export const rewardId = (userkey: string, seq: number) => `${userkey}-${seq}`;

/** The shape of a reward id: the owner's user key (`u` + 19 lowercase alnum, see domain/ids.ts), `-`, its number in that ledger. */
const REWARD_ID = /^(u[0-9a-z]{19})-([1-9][0-9]{0,15})$/;

/** The user key inside a reward id, so the call goes straight to the owner's ledger; null for anything that is not a reward id. */
export function userkeyOfRewardId(rewarddtlid: string): string | null {
	return REWARD_ID.exec(rewarddtlid)?.[1] ?? null;
}

/** The reward's number inside its ledger, or null when `rewarddtlid` is not a reward id of `userkey`. */
export function seqOfRewardId(rewarddtlid: string, userkey: string): number | null {
	const match = REWARD_ID.exec(rewarddtlid);
	if (!match || match[1] !== userkey) return null;
	const seq = Number(match[2]);
	return Number.isSafeInteger(seq) ? seq : null;
}
