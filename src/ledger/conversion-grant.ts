import { grantRewards, queueConversionWebhook } from "./grant";
import { rewardSummary } from "./rows";
import { ledgerFor } from "./stub";
import type { ConversionAnnouncement, GrantResult, RewardGrant } from "./types";
import type { LedgerWriter } from "./writer";

/** The referrer's side of a conversion: whose ledger, and the grants it gets. */
export interface ReferrerSide {
	userkey: string;
	grants: RewardGrant[];
}

/**
 * A conversion that rewards both its friend (this ledger) and its referrer:
 * the referrer's grant is sent to the referrer's ledger first, this ledger's
 * grants are written while it works, and once it answers, the
 * `conversion.recorded` webhook is queued here with both sides' rewards
 * (this ledger's, then the referrer's), in a transaction of its own. So the
 * two grants run in parallel, and the webhook still leaves once, from this
 * ledger's outbox, with every reward id. A failure of the referrer's grant
 * fails the call; its retry (idempotent by grant key and event id) completes
 * what is missing.
 */
export async function grantWithReferrer(
	writer: LedgerWriter,
	env: Env,
	grants: RewardGrant[],
	announcement: ConversionAnnouncement,
	referrer: ReferrerSide,
): Promise<{ friend: GrantResult; referrer: GrantResult }> {
	const { appid } = writer.identity;
	const theirs = ledgerFor(env, appid, referrer.userkey).grant(appid, referrer.userkey, referrer.grants);
	// No alarm or flush for this write on its own: the webhook's write right after arms them for both.
	const mine = writer.transactionSync(() => grantRewards(writer.context(), grants));
	let referrerResult: GrantResult;
	try {
		referrerResult = await theirs;
	} catch (error) {
		writer.write(() => undefined);
		throw error;
	}
	const otherRewards = referrerResult.rewards.map((r) => rewardSummary(referrer.userkey, r));
	writer.write((tx) => queueConversionWebhook(tx, mine, { ...announcement, otherRewards }));
	return { friend: mine, referrer: referrerResult };
}
