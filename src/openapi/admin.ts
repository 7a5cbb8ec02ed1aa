import { z } from "zod";
import { importSchema } from "../admin/import";
import { rewardEmailSettings, templateSchema } from "../admin/messages";
import {
	addCouponsSchema,
	createAppSchema,
	createCampaignSchema,
	testKeysSchema,
	updateAppSchema,
	updateCampaignSchema,
} from "../admin/schemas";
import { statusChangesSchema } from "../operations/schemas";
import { LANGS, MESSAGE_KINDS, REWARD_EMAIL_MODES } from "../outbox/templates";
import { accessApi } from "./admin-access";
import { app, logoApi } from "./admin-app";
import { adminReward, rewardDetail } from "./admin-reward";
import type { AdminRoute } from "./admin-route";

/**
 * The admin API (/admin/v1) for the OpenAPI document. Hono routes carry no
 * schema, so each route is described here; test/openapi/document.integration.test.ts
 * fails when a route of adminRoutes has no entry.
 */

const campaign = z.looseObject({
	campaignid: z.number(),
	appid: z.string(),
	campaignname: z.string(),
	archived: z.boolean().describe("Archived: no new conversion (409 campaign_archived), out of the console's pickers; restorable"),
	archivedat: z.string().nullable().describe("When it was archived; null while active"),
});
const page = { limit: z.number().int().min(1).max(200).default(50), cursor: z.string().optional() };
const nextcursor = z.string().nullable().describe("Cursor of the next page; null on the last page");
const adminUser = z.looseObject({ userkey: z.string(), email: z.string().nullable(), referralcode: z.string() });
const messageView = z.object({
	kind: z.enum(MESSAGE_KINDS),
	language: z.enum(LANGS),
	subject: z.string(),
	body: z.string(),
	custom: z.boolean().describe("false: the service's default text in that language"),
});
const rewardEmailMode = z
	.enum(REWARD_EMAIL_MODES)
	.describe("Sends the reward-earned email: auto (when the app has an email sender; the default), on, off");
const breaker = z.looseObject({ state: z.string() });
const delivery = z.looseObject({ eventid: z.string(), kind: z.string(), type: z.string(), status: z.string(), attempts: z.number() });

export const adminApi: AdminRoute[] = [
	{
		method: "post",
		path: "/apps",
		summary: "Create an app (tenant); answers its live and test keys once",
		body: createAppSchema,
		status: 201,
		response: z.object({
			appid: z.string(),
			apikey: z.string(),
			privatekey: z.string(),
			webhooksecret: z.string(),
			testapikey: z.string().describe("The test mode's API key (ak_test_...): what it makes is invisible to the live keys"),
			testprivatekey: z.string().describe("The test mode's private key (pk_test_...), shown once"),
		}),
	},
	{ method: "get", path: "/apps", summary: "List apps", query: page, status: 200, response: z.object({ apps: z.array(app), nextcursor }) },
	{ method: "get", path: "/apps/{appid}", summary: "One app", status: 200, response: app },
	{ method: "patch", path: "/apps/{appid}", summary: "Change an app's settings", body: updateAppSchema, status: 200, response: app },
	{
		method: "post",
		path: "/apps/{appid}/rotate-privatekey",
		summary: "Issue a new private key (the old one stops working, and so do referral page links)",
		status: 200,
		response: z.object({ appid: z.string(), privatekey: z.string() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/rotate-webhooksecret",
		summary: "Issue a new webhook signing secret (live and test deliveries share it)",
		status: 200,
		response: z.object({ appid: z.string(), webhooksecret: z.string() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/testkeys",
		summary:
			'Create the app\'s test key pair, or with {"rotate": true} replace it (the old test keys stop working); answers it once. An app that has test keys and no rotate: 409 testkeys_exist, nothing changed',
		body: testKeysSchema,
		status: 200,
		response: z.object({ appid: z.string(), testapikey: z.string(), testprivatekey: z.string() }),
	},
	{
		method: "delete",
		path: "/apps/{appid}/testdata",
		summary: "Erase what the app's test keys made (users, ledgers, events, rewards, webhooks, clicks, stats); live data untouched",
		status: 200,
		response: z.object({
			appid: z.string(),
			deleted: z.object({ users: z.number(), rows: z.number() }),
			done: z.boolean().describe("false: the call's bound was reached; call again to erase the rest"),
		}),
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns",
		summary: "Create a campaign",
		body: createCampaignSchema,
		status: 201,
		response: z.object({ campaignid: z.number() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/campaigns",
		summary: "List an app's campaigns (archived=true: archived ones only; archived=false: active ones only; absent: both)",
		query: { ...page, archived: z.enum(["true", "false"]).optional() },
		status: 200,
		response: z.object({ campaigns: z.array(campaign), nextcursor }),
	},
	{
		method: "get",
		path: "/apps/{appid}/campaigns/{campaignid}",
		summary: "One campaign with its rules, social actions and free coupon count",
		status: 200,
		response: campaign,
	},
	{
		method: "patch",
		path: "/apps/{appid}/campaigns/{campaignid}",
		summary: "Change a campaign (only the fields sent)",
		body: updateCampaignSchema,
		status: 200,
		response: campaign,
	},
	{
		method: "delete",
		path: "/apps/{appid}/campaigns/{campaignid}",
		summary:
			"Delete a campaign nothing references, with its rules, social actions, coupon pool and emails (manager). Referenced (the default, users in it, conversions, rewards): 409 campaign_in_use with referencedby, nothing deleted; archive it instead",
		status: 200,
		response: z.object({ campaignid: z.number(), deleted: z.literal(true) }),
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/archive",
		summary:
			"Archive a campaign (manager): it records no new conversion (409 campaign_archived) and grants nothing new; its rewards and history stay; hidden from the console's pickers. The default campaign: 409 campaign_in_use. Repeating it changes nothing",
		status: 200,
		response: campaign,
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/restore",
		summary: "Restore an archived campaign (manager): it records conversions again. Repeating it changes nothing",
		status: 200,
		response: campaign,
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/coupons",
		summary: "Add coupon codes to a campaign's pool",
		body: addCouponsSchema,
		status: 201,
		response: z.object({ added: z.number(), skipped: z.number(), couponsavailable: z.number() }),
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/default",
		summary: "Make the campaign the app's default (manager): the one register uses when it names none and the user has no referrer",
		status: 200,
		response: z.object({ appid: z.string(), defaultcampaignid: z.number() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/campaigns/{campaignid}/messages",
		summary:
			"The campaign's emails (outreach, reminder, reward) in every language (en, fr, de, es): each its own text or the default (custom false), with the variables each kind knows, and whether it sends the reward-earned email (docs/messages.md)",
		status: 200,
		response: z.object({
			campaignid: z.number().int(),
			rewardemail: rewardEmailMode,
			languages: z.array(z.enum(LANGS)),
			messages: z.record(
				z.enum(MESSAGE_KINDS),
				z.object({ variables: z.record(z.string(), z.string()), templates: z.record(z.enum(LANGS), messageView) }),
			),
		}),
	},
	{
		method: "put",
		path: "/apps/{appid}/campaigns/{campaignid}/messages/{kind}/{language}",
		summary:
			"Save the campaign's text of one email (kind outreach, reminder or reward) in one language; plain text with {{variables}}, never HTML. An unknown variable is 400 unknown_variable naming the field, and nothing is saved",
		body: templateSchema,
		status: 200,
		response: messageView,
	},
	{
		method: "delete",
		path: "/apps/{appid}/campaigns/{campaignid}/messages/{kind}/{language}",
		summary: "Drop the campaign's text of one email in one language: the default applies again (answered)",
		status: 200,
		response: messageView,
	},
	{
		method: "put",
		path: "/apps/{appid}/campaigns/{campaignid}/rewardemail",
		summary:
			"Whether the campaign sends the reward-earned email: auto (the default: when the app has an email sender), on or off (docs/messages.md)",
		body: rewardEmailSettings,
		status: 200,
		response: rewardEmailSettings,
	},
	{
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/messages/{kind}/{language}/preview",
		summary:
			"The email a text would make (subject, text part, HTML part) with the campaign's offer, the app's logo and colour and a sample recipient; checked as on save, nothing saved",
		body: templateSchema,
		status: 200,
		response: z.object({ kind: z.enum(MESSAGE_KINDS), language: z.enum(LANGS), subject: z.string(), text: z.string(), html: z.string() }),
	},

	{
		method: "get",
		path: "/apps/{appid}/deliveries",
		summary: "Recent webhook and email deliveries, newest first",
		query: page,
		status: 200,
		response: z.looseObject({ deliveries: z.array(delivery), nextcursor }),
	},
	{
		method: "get",
		path: "/apps/{appid}/deliveries/{eventid}",
		summary: "One delivery with its payload and attempts",
		status: 200,
		response: delivery,
	},
	{
		method: "post",
		path: "/apps/{appid}/deliveries/{eventid}/redeliver",
		summary: "Send an event again (same webhook-id)",
		status: 202,
		response: z.object({ eventid: z.string(), enqueued: z.boolean() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/webhook-breaker",
		summary: "The circuit breaker of the app's webhook endpoint (docs/webhooks.md)",
		status: 200,
		response: breaker,
	},
	{
		method: "post",
		path: "/apps/{appid}/webhook-breaker/reset",
		summary: "Close the app's webhook circuit breaker",
		status: 200,
		response: breaker,
	},
	{
		method: "post",
		path: "/apps/{appid}/users:import",
		summary: "Import up to 1,000 users, all or nothing, with register's checks",
		body: importSchema,
		status: 201,
		response: z.object({ imported: z.number(), users: z.array(z.looseObject({ userkey: z.string(), referralcode: z.string() })) }),
	},
	{
		method: "get",
		path: "/apps/{appid}/users",
		summary: "Search users by email, account id or userkey prefix, or referral code",
		query: { ...page, q: z.string().optional() },
		status: 200,
		response: z.object({ users: z.array(adminUser), nextcursor }),
	},
	{
		method: "get",
		path: "/apps/{appid}/users/{userkey}",
		summary: "A user's profile, referrer, balance (all campaigns) and share-link clicks",
		status: 200,
		response: z.looseObject({ user: adminUser }),
	},
	{
		method: "get",
		path: "/apps/{appid}/users/{userkey}/friends",
		summary: "A user's friends, newest first",
		query: page,
		status: 200,
		response: z.object({ friends: z.array(adminUser), nextcursor }),
	},
	{
		method: "delete",
		path: "/apps/{appid}/users/{userkey}",
		summary: "Erase a person's data (money records stay, anonymized); idempotent and logged",
		status: 200,
		response: z.looseObject({ userkey: z.string(), erased: z.boolean(), alreadyerased: z.boolean() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/users/{userkey}/export",
		summary: "Everything held about a person, as one JSON document",
		status: 200,
		response: z.looseObject({ exportedat: z.string(), appid: z.string() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/rewards",
		summary: "Rewards across the app, newest first (from the D1 projection), with friend, referrer and fraud signals",
		query: {
			...page,
			status: z
				.string()
				.optional()
				.describe(
					"Comma-separated statuses among Approved, UnderReview, Suspicious, Rejected, Rewarded (the review queue: Suspicious, the rewards a person must decide; UnderReview, those that approve themselves after their hold); absent: every status",
				),
			campaignid: z.number().int().optional().describe("only this campaign's rewards"),
			userkey: z.string().optional(),
			rewarddtlid: z.string().optional().describe("one reward by its id"),
			from: z.string().optional().describe("created on or after this day (YYYY-MM-DD) or ISO date-time"),
			to: z.string().optional().describe("created on or before this day (the whole day counts) or before this ISO date-time"),
		},
		status: 200,
		response: z.looseObject({ rewards: z.array(adminReward), nextcursor }),
	},
	{
		method: "get",
		path: "/apps/{appid}/rewards/{rewarddtlid}",
		summary:
			"One reward with its order id (customid), the event it was granted for and, for a Stripe conversion, the payment (docs/operators.md, Review queue)",
		status: 200,
		response: rewardDetail,
	},
	{
		method: "post",
		path: "/apps/{appid}/rewards/status",
		summary: "Change reward statuses, all or none (the changerewardstatus path)",
		body: z.object({ changes: statusChangesSchema }),
		status: 200,
		response: z.object({ updated: z.number() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/stats",
		summary:
			"Per local day of the app's timezone: unique clicks, signups, conversions, rewards, amounts earned (rejected and refunded left out) and redeemed per unit, totals, the funnel per campaign, top referrers, and raw share-link requests",
		query: { campaignid: z.number().int().optional(), from: z.string().optional(), to: z.string().optional() },
		status: 200,
		response: z.looseObject({ from: z.string(), to: z.string() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/leaderboard",
		summary:
			"getleaderboard's board for operators: referrers ranked by distinct friends with a live rewarded event in the period (all, or this month or week in the app's timezone), each with its email; erased users never appear",
		query: {
			campaignid: z.number().int().optional(),
			period: z.enum(["all", "month", "week"]).optional(),
			limit: z.number().int().min(1).max(100).optional(),
		},
		status: 200,
		response: z.object({
			campaignid: z.number().int(),
			period: z.enum(["all", "month", "week"]),
			bucket: z.string().describe("all, month:YYYY-MM or week:YYYY-MM-DD (its Monday)"),
			timezone: z.string(),
			leaderboard: z.array(
				z.object({
					rank: z.number().int(),
					userkey: z.string(),
					displayname: z.string(),
					friendsconverted: z.number().int(),
					earned: z.number(),
					email: z.string().nullable(),
				}),
			),
		}),
	},
	...accessApi,
	...logoApi,
];
