import { z } from "zod";
import { findApp } from "../db/apps";
import type { EventContext, EventInput, StoredEvent } from "../db/events";
import type { ConversionUser } from "../db/user-profile";
import type { WorkOutcome } from "../domain/outcome";
import { checkSignals } from "../fraud/check";
import type { FraudReview } from "../fraud/signals";
import { ApiError, badRequest, campaignArchived, campaignNotFound, refuseErased, userNotFound } from "../http/errors";
import { amount, customId, id, MAX_MONEY, optionalCampaignId, optionalEmail, optionalId, optionalText } from "../http/fields";
import { eventGateFor } from "../ledger/event-gate";
import { toHundredths } from "../rewards/money";
import { campaignClosed, firingRules, isPercentRule, matchingRules, type OwnedGrant, rewardsForEvent } from "../rewards/rules";
import { type ConversionApp, conversionContext } from "./conversion-context";
import { grantConversion } from "./conversion-grants";
import { outcomeOf, type WorkContext } from "./work";

/**
 * Recording a conversion (docs/rewards.md): the work `registerconversionevent`
 * and the Stripe consumer share, answered as a typed outcome
 * (domain/outcome.ts). Registers no operation, so integration code may
 * import it.
 */

/** The conversion as the public operation takes it (operation 13); the Stripe consumer checks what it derives with it too. */
export const conversionSchema = z.object({
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
	/** What was bought (docs/rewards.md, "Products and categories"); rules may be limited to some products or categories. */
	productid: optionalText(100),
	category: optionalText(100),
});

/**
 * What the event earns: the decision stored with it, else (a new event) one
 * computed now from the campaign's active rules and checked so that nothing
 * is stored for an event that would fail: every amount is exact in
 * hundredths and at most MAX_MONEY.
 */
function decide(context: Extract<EventContext, { ok: true }>, input: EventInput, now: Date, fraud?: FraudReview): OwnedGrant[] {
	const { campaign, rules, user, referrer, firstEventAt, timezone } = context;
	const event = {
		customid: input.customid,
		eventname: input.eventname,
		transactionvalue: input.transactionvalue,
		productid: input.productid,
		category: input.category,
		firstEventAt,
		timezone,
	};
	if (input.transactionvalue === null && firingRules(rules, event).some(isPercentRule)) {
		throw badRequest("transactionvalue: is required for this event (its campaign rewards a percent of it).", {
			fields: ["transactionvalue"],
		});
	}
	const owned = rewardsForEvent(campaign, rules, user, referrer, event, now, fraud);
	for (const { grant } of owned) {
		const amounts = [grant.amount, ...(grant.tiers ?? []).map((t) => t.amount)];
		if (amounts.some((a) => toHundredths(a) === null || a > MAX_MONEY)) {
			throw badRequest(
				`transactionvalue: the reward it earns (${Math.max(...amounts)} ${grant.rewardunit}) is above the limit of ${MAX_MONEY} per reward.`,
				{ fields: ["transactionvalue"] },
			);
		}
	}
	return owned;
}

/**
 * A customid is one event of one user: a repeat must name the same user,
 * event name (case-insensitive, as rules match it) and value, else it is
 * refused and grants nothing. Without this, a repeat for another user would
 * hand the recorded event's rewards to the repeating user's ledgers.
 */
export function assertSameEvent(stored: StoredEvent, input: Pick<EventInput, "userkey" | "eventname" | "transactionvalue">): void {
	const value = (v: number | null) => (v === null ? null : toHundredths(v));
	const sameName = stored.eventname.trim().toLowerCase() === input.eventname.trim().toLowerCase();
	if (stored.userkey === input.userkey && sameName && value(stored.transactionvalue) === value(input.transactionvalue)) return;
	const recorded = { userkey: stored.userkey, eventname: stored.eventname, transactionvalue: stored.transactionvalue };
	throw new ApiError(
		409,
		"customid_conflict",
		`customid ${stored.customid} is already recorded as another event (userkey ${recorded.userkey}, eventname ${recorded.eventname}, ` +
			`transactionvalue ${recorded.transactionvalue ?? "none"}); nothing was granted. Send a new customid for a new event.`,
		{ fields: ["customid"], recorded },
	);
}

/** Fraud signals (docs/fraud.md), checked only when someone could be rewarded. */
function fraudReview(context: Extract<EventContext, { ok: true }>): FraudReview | undefined {
	const { user, referrer, campaign, facts } = context;
	if (!referrer || user.isexistinguser) return undefined;
	return checkSignals(user, referrer, campaign, facts);
}

/** The user's profile as the decision's friend snapshot: the gate keeps it without the person's email, name and image (event-gate.ts). */
function withPerson(decision: OwnedGrant[], user: ConversionUser): OwnedGrant[] {
	return decision.map((g) => {
		const { friend } = g.grant;
		if (friend.userkey !== user.userkey || friend.email !== null || friend.name !== null || friend.profileimage !== null) return g;
		return { ...g, grant: { ...g.grant, friend: { ...friend, email: user.email, name: user.name, profileimage: user.profileimage } } };
	});
}

/**
 * Records the event once per (app, customid) with its frozen decision, or
 * reads the one already recorded: the claim is the event gate's
 * (ledger/event-gate.ts, issue 49), and the context comes from the
 * ledgers' profiles and the isolate's caches (conversion-context.ts): no D1
 * round trip once they are warm. A call refused before its claim (an erased or unknown user,
 * an archived or unknown campaign, an event its rules cannot price) first
 * asks the gate whether the customid is recorded: a repeat of a recorded
 * event completes as recorded, and one customid for two users is 409,
 * whatever the refusal would have been. Exported for tests that simulate a
 * call dying right after this step, and for the completion pass.
 */
export async function recordConversion(env: Env, input: EventInput, cachedApp?: ConversionApp) {
	// The app as auth cached it (http/auth.ts); the completion pass, which has none, reads it (off any request's path).
	const app = cachedApp ?? (await findApp(env.DB, input.appid));
	if (!app) throw userNotFound();
	const read = await conversionContext(env, app, input);
	const gate = eventGateFor(env, input.appid, input.customid);
	const legacy = read.ok ? read.legacy : true;
	let prepared: Prepared;
	try {
		prepared = prepare(read, input);
	} catch (refusal) {
		// The rare path: is it a repeat? Then its stored decision decides, not today's refusal.
		const stored = await gate.peek(input.appid, input.customid, legacy);
		if (!stored) throw refusal;
		assertSameEvent(stored, input);
		if (!read.ok || read.user.erasedAt) throw refusal;
		const again =
			read.campaign.campaignid === stored.campaignid
				? read
				: await conversionContext(env, app, { ...input, campaignid: stored.campaignid });
		if (!again.ok) throw refusal;
		return recorded(again, input, stored);
	}
	const { context, decision, createdAt } = prepared;
	const event = {
		...input,
		campaignid: context.campaign.campaignid,
		extrainfo: input.extrainfo,
		createdAt: createdAt.toISOString(),
		productid: input.productid ?? null,
		category: input.category ?? null,
		decision,
	};
	const claimed = await gate.claim(event, legacy);
	// Lost a race for the customid (or a repeat): the stored event must be this one, else nothing is granted.
	if (!claimed.isNew) assertSameEvent(claimed.event, input);
	if (claimed.isNew) return { isNew: true, ...facts(context, input), event, decision };
	// A repeat in another campaign than the one asked for now: its email setting and rules are its campaign's.
	// The referrer as read, erased or not: facts() tells an erased one apart (`erasedReferrer`).
	const asRead = read.ok ? { ...context, referrer: read.referrer } : context;
	const own =
		claimed.event.campaignid === context.campaign.campaignid
			? asRead
			: await conversionContext(env, app, { ...input, campaignid: claimed.event.campaignid });
	if (!own.ok) throw own.reason === "user_not_found" ? userNotFound() : campaignNotFound();
	return recorded(own, input, claimed.event);
}

type Context = Extract<EventContext, { ok: true }>;
type Prepared = { context: Context; decision: OwnedGrant[]; createdAt: Date };

/** Everything before the claim: the checks of a new event and its decision, computed now. Throws the refusal. */
function prepare(read: EventContext, input: EventInput): Prepared {
	if (!read.ok) throw read.reason === "user_not_found" ? userNotFound() : campaignNotFound();
	// Erasure is final (docs/fraud.md): an erased user's events are refused, and an erased referrer is no
	// referrer any more, so it earns nothing new (a stored decision's grants for it are left out too).
	refuseErased(read.user);
	// An archived campaign takes no new event (issue 48, docs/api.md); a repeat of an event recorded before
	// completes as recorded (exactly once), so archiving never strands a conversion half granted.
	if (read.campaign.archivedAt !== null) throw campaignArchived(read.campaign);
	const context = read.referrer?.erasedAt ? { ...read, referrer: null } : read;
	const createdAt = new Date();
	return { context, decision: decide(context, input, createdAt, fraudReview(context)), createdAt };
}

/** What the grants and the answer need besides the event and its decision. */
function facts(read: Context, input: EventInput) {
	const context = read.referrer?.erasedAt ? { ...read, referrer: null } : read;
	const { user, referrer, rules, campaign } = context;
	return {
		user,
		referrer,
		// Erased: no referrer any more, but what an earlier attempt granted it still has its records handed back.
		erasedReferrer: read.referrer?.erasedAt ? read.referrer.userkey : null,
		campaign,
		matched: matchingRules(rules, input.eventname).length > 0,
		eventnames: [...new Set(rules.map((r) => r.eventname))],
		rewardemail: context.rewardemail,
		webhooks: context.webhooks,
	};
}

/** A repeat of a recorded event: its stored decision, or for events from before decisions were kept, one from the current rules at its time. */
function recorded(read: Context, input: EventInput, stored: StoredEvent) {
	const known = facts(read, input);
	if (stored.decision) return { isNew: false, ...known, event: stored, decision: withPerson(stored.decision, known.user) };
	const context = read.referrer?.erasedAt ? { ...read, referrer: null } : read;
	const decision = decide(context, { ...input, ...stored }, new Date(stored.createdAt), fraudReview(context));
	return { isNew: false, ...known, event: stored, decision };
}

export type ConversionRequest = z.output<typeof conversionSchema>;
export type ConversionAnswer = { message: string; duplicate: boolean; rewardscreated: number };

/**
 * Records the event once per (app, customid) with the rewards its rules earn
 * at that moment (its decision, frozen: docs/rewards.md), then hands them to
 * the friend's and the referrer's ledgers at once, which queue the
 * `conversion.recorded` webhook with their rewards (conversion-grants.ts).
 * Every step is idempotent, so a retry of the same customid (or one arriving
 * at the same moment) completes exactly that decision, whatever happened to
 * the campaign since, and creates nothing twice: a repeat is `duplicate`.
 */
export function recordConversionEvent(ctx: WorkContext, input: ConversionRequest): Promise<WorkOutcome<ConversionAnswer>> {
	return outcomeOf(async () => {
		const { env, app } = ctx;
		const { isNew, event, decision, user, referrer, erasedReferrer, campaign, matched, eventnames, rewardemail, webhooks } =
			await recordConversion(
				env,
				{
					appid: app.appid,
					userkey: input.userkey,
					customid: input.customid,
					eventname: input.eventname,
					transactionvalue: input.transactionvalue,
					extrainfo: input.extrainfo ?? null,
					campaignid: input.campaignid ?? null,
					growthhack: input.growthhack,
					productid: input.productid ?? null,
					category: input.category ?? null,
				},
				app,
			);
		const { friend: friendRewards, referrer: referrerRewards } = await grantConversion(env, app.appid, {
			event,
			user,
			referrer,
			erasedReferrer,
			decision,
			rewardemail,
			webhooks,
		});

		const created = [...friendRewards, ...referrerRewards].filter((r) => r.created).length;
		let message = `Conversion recorded; ${created} reward(s) created.`;
		const closed = campaignClosed(campaign, new Date(event.createdAt));
		if (closed) message += ` Campaign ${campaign.campaignid} (${campaign.campaignname}) ${closed}: its events earn nothing.`;
		else if (!matched) {
			// A misspelt event name is the usual cause: say which names the campaign rewards.
			const names = eventnames.length > 0 ? eventnames.join(", ") : "none";
			message += ` No active rule of campaign ${campaign.campaignid} (${campaign.campaignname}) has the eventname ${input.eventname}; its event names: ${names}.`;
		}
		if (!isNew) {
			message =
				created === 0
					? "Duplicate event: this customid was already recorded; no new event or reward was created."
					: `Duplicate event: this customid was already recorded; ${created} reward(s) it was missing were completed.`;
		}
		return { kind: isNew ? "applied" : "duplicate", value: { message, duplicate: !isNew, rewardscreated: created } };
	});
}
