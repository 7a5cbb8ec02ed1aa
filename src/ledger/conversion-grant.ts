import type { ProjectionMessage } from "../db/projection-batch";
import type { FriendRecord } from "./friends";
import { grantRewards } from "./grant";
import { changeProfile } from "./profile";
import { rewardSummary } from "./rows";
import { ledgerFor } from "./stub";
import type { ConversionAnnouncement, GrantResult, RewardGrant } from "./types";
import type { LedgerWriter } from "./writer";

/** The referrer's side of a conversion: whose ledger, and the grants it gets (none: it is only told of `converted`). */
export interface ReferrerSide {
	userkey: string;
	grants: RewardGrant[];
	/**
	 * This event converts the friend: the referrer's ledger marks it in the grant's transaction (friends.ts), and
	 * this ledger keeps that it was told (profile.ts `convertedTold`) in its own grant's transaction, once the
	 * referrer answered: no call of its own for it (issue 49, "one call fewer").
	 */
	converted?: FriendRecord;
	/** Erased since an earlier attempt of this event granted it: it is given nothing new, only asked for those records. */
	erased?: boolean;
}

/**
 * A conversion that rewards both its friend (this ledger) and its referrer:
 * the referrer's grant is sent to the referrer's ledger first; meanwhile
 * this ledger creates its tables when it has none (a first reward's costliest
 * write); once the referrer answers, this ledger's grants are written with
 * the `conversion.recorded` webhook carrying both sides' rewards (this
 * ledger's, then the referrer's) in ONE transaction, so the event rides in
 * the insert of a new reward's projection entry (grant.ts, issue 33: no
 * outbox row of its own, and no later update of that entry). The webhook
 * still leaves once, from this ledger's outbox, with every reward id. A
 * failure of the referrer's grant fails the call before this ledger wrote
 * anything; its retry (idempotent by grant key and event id), or the
 * completion pass, completes what is missing.
 *
 * A referrer without rewards for the event, which the event converts its
 * friend for, is only told (`rememberFriends`) by this same call, where the
 * Worker called both ledgers before, then this one once more to keep that the
 * referrer was told (issue 49, "one call fewer").
 *
 * The referrer's ledger hands back its records (`carried`: its rewards'
 * projection entries, held there as if sent), and this ledger's next message
 * carries them with its own (`carry`, records-queued.ts): a conversion sends
 * ONE projection message, not one per ledger (issue 49). If this ledger never
 * sends them (this call fails, the object is evicted, the send fails), the
 * referrer's hold ends and its alarm sends them itself.
 */
export async function grantWithReferrer(
	writer: LedgerWriter,
	env: Env,
	grants: RewardGrant[],
	announcement: ConversionAnnouncement,
	referrer: ReferrerSide,
	carry: (part: ProjectionMessage) => void,
): Promise<{ friend: GrantResult; referrer: GrantResult }> {
	const { appid } = writer.identity;
	const stub = ledgerFor(env, appid, referrer.userkey);
	// A referrer without rewards for this event is only told its friend converted (its friends page).
	const theirs: Promise<GrantResult> =
		referrer.grants.length === 0 && referrer.converted
			? stub.rememberFriends(appid, referrer.userkey, [referrer.converted], "converted").then(() => ({ rewards: [], skipped: [] }))
			: stub.grant(appid, referrer.userkey, referrer.grants, undefined, referrer.erased ? "existing" : "records", referrer.converted);
	// The tables now, while the referrer's ledger works; the transaction after the await still starts empty unless
	// another call wrote in between (writer.ts, TxContext.empty), which is then seen.
	writer.ensureSchema();
	const { carried, records, ...referrerResult } = await theirs;
	if (carried) {
		// Our own ledger's JSON (UserLedger.grant); the consumer checks every message against its schema.
		const part: ProjectionMessage = JSON.parse(carried);
		carry(part);
	}
	// Our own ledger's JSON (UserLedger.grant), checked against the message's schema when this ledger sends it.
	const handed: ProjectionMessage | undefined = records ? JSON.parse(records) : undefined;
	const otherRewards = referrerResult.rewards.map((r) => rewardSummary(referrer.userkey, r));
	const mine = writer.write((tx) => {
		// Told: kept with this grant, so the friend's later conversions say nothing (conversion-grants.ts).
		if (referrer.converted) changeProfile(tx.sql, { kind: "converted" });
		// The referrer's records handed back, kept with this grant's (carried-records.ts): no entry of theirs, no acknowledgement.
		return grantRewards(tx, grants, { ...announcement, otherRewards }, undefined, { carried: handed });
	});
	return { friend: mine, referrer: referrerResult };
}
