import { z } from "zod";
import { recordConversionEvent } from "../db/events";
import type { User } from "../db/users";
import { badRequest, campaignNotFound, userNotFound } from "../http/errors";
import { amount, customId, id, optionalCampaignId, optionalEmail, optionalId, optionalText } from "../http/fields";
import { defineOperation, type OperationContext } from "../http/operation";
import { rewardsForEvent } from "../ledger/rules";
import { ledgerFor } from "../ledger/stub";
import type { LedgerReward, RewardGrant } from "../ledger/types";
import { appHasWebhook, insertOutboxEvent, sendOutboxEvents, webhookEvent } from "../outbox/events";

const schema = z.object({
	userkey: id,
	email: optionalEmail,
	useraccountid: optionalId,
	eventname: id.pipe(z.string().max(100, "is too long")),
	transactionvalue: z
		.union([amount, z.literal(""), z.null()])
		.optional()
		.transform((v) => (v === "" || v === null || v === undefined ? null : v)),
	extrainfo: optionalText(4000),
	customid: customId,
	campaignid: optionalCampaignId,
	growthhack: id.pipe(z.string().max(100, "is too long")),
});

/** Sends grants to the ledger of their owner; one RPC per ledger. */
async function grantTo(ctx: OperationContext, owner: User, grants: RewardGrant[]): Promise<(LedgerReward & { created: boolean })[]> {
	if (grants.length === 0) return [];
	const result = await ledgerFor(ctx.env, ctx.app.appid, owner.userkey).grant(ctx.app.appid, owner.userkey, grants);
	return result.rewards;
}

/**
 * Operation 13. Records the event once per (app, customid), then hands the
 * rewards its rules earn to the ledgers of the friend and of its referrer.
 * Every step is idempotent, so a retry of the same customid (or one arriving
 * at the same moment) completes whatever an interrupted call left undone and
 * creates nothing twice.
 */
export const registerconversionevent = defineOperation({
	schema,
	async handle(ctx, input) {
		const { env, app } = ctx;
		const recorded = await recordConversionEvent(env.DB, {
			appid: app.appid,
			userkey: input.userkey,
			customid: input.customid,
			eventname: input.eventname,
			transactionvalue: input.transactionvalue,
			extrainfo: input.extrainfo ?? null,
			campaignid: input.campaignid ?? null,
			growthhack: input.growthhack,
		});
		if (!recorded.ok) {
			if (recorded.reason === "user_not_found") throw userNotFound();
			if (recorded.reason === "campaign_not_found") throw campaignNotFound();
			throw badRequest("transactionvalue: is required for this event (its campaign rewards a percent of it).", {
				fields: ["transactionvalue"],
			});
		}
		const { event, user, referrer, campaign, rules, isNew } = recorded;
		const owned = rewardsForEvent(campaign, rules, user, referrer, event, new Date(event.createdAt));
		const pick = (owner: "friend" | "referrer") => owned.filter((g) => g.owner === owner).map((g) => g.grant);
		const [friendRewards, referrerRewards] = await Promise.all([
			grantTo(ctx, user, pick("friend")),
			referrer ? grantTo(ctx, referrer, pick("referrer")) : [],
		]);

		// Sent after the ledgers decided, so it carries each reward's real status; its id is fixed per event.
		const webhook = webhookEvent(
			app.appid,
			"conversion.recorded",
			{
				customid: event.customid,
				eventname: event.eventname,
				userkey: user.userkey,
				referrerkey: referrer?.userkey ?? null,
				transactionvalue: event.transactionvalue,
				extrainfo: event.extrainfo ?? "",
				campaignid: event.campaignid,
				growthhack: event.growthhack,
				recordedat: event.createdAt,
				rewards: [
					...friendRewards.map((r) => rewardSummary(user.userkey, r)),
					...referrerRewards.map((r) => rewardSummary(referrer?.userkey ?? "", r)),
				],
			},
			`evt_conversion_${app.appid}_${event.customid}`,
		);
		// An app without a webhook URL gets no webhook events (docs/webhooks.md): no round trip for it. The cached
		// app may be up to 30 s old; the insert checks the URL again, so a URL just removed records nothing.
		if (app.webhookurl) {
			const inserted = await insertOutboxEvent(env.DB, webhook, appHasWebhook(app.appid)).run();
			if (inserted.meta.changes === 1) ctx.waitUntil(sendOutboxEvents(env, [webhook]));
		}

		const created = [...friendRewards, ...referrerRewards].filter((r) => r.created).length;
		let message = `Conversion recorded; ${created} reward(s) created.`;
		if (!isNew) {
			message =
				created === 0
					? "Duplicate event: this customid was already recorded; no new event or reward was created."
					: `Duplicate event: this customid was already recorded; ${created} reward(s) it was missing were completed.`;
		}
		return { message, duplicate: !isNew };
	},
});

function rewardSummary(userkey: string, reward: LedgerReward) {
	return {
		rewarddtlid: reward.rewarddtlid,
		userkey,
		usertype: reward.usertype,
		reward: reward.reward,
		rewardunit: reward.rewardunit,
		rewardtype: reward.rewardtype,
		rewardstatus: reward.rewardstatus,
	};
}
