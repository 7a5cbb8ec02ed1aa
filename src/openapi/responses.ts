import { z } from "zod";

/**
 * Success shapes of the public operations, for the OpenAPI document. Each is
 * the whole body: `success: true`, `message` and the operation's fields.
 * Objects are closed (additionalProperties: false), so a field the service
 * sends but this file does not name fails the contract test (test/e2e/openapi-flow).
 */

/** Top-level request fields the operation does not know: ignored, listed here (absent when there are none). */
const warnings = z
	.array(z.object({ field: z.string(), message: z.string() }))
	.optional()
	.describe("Unknown request fields, ignored (absent when there are none)");

const ok = <T extends z.ZodRawShape>(fields: T) => z.object({ success: z.literal(true), message: z.string(), ...fields, warnings });

const reward = z.object({
	rewarddtlid: z.string(),
	rewardstatus: z.enum(["Approved", "UnderReview", "Suspicious", "Rejected", "Rewarded"]),
	comment: z.string(),
	eventname: z.string(),
	reward: z.string().describe('Amount, as TEXT: the shortest exact decimal ("10", "12.5", "0.07"); docs/api.md, "Amounts in answers"'),
	rewardunit: z.string(),
	rewardedon: z.string().describe("d-Mon-yyyy"),
	rewardtype: z.enum(["InstoreCredits", "Coupon", "Stripe"]),
	usertype: z.enum(["Friend", "Referrer"]),
	coupon: z.string(),
	couponimage: z.string(),
	coupondetails: z.string(),
	couponname: z.string(),
	campaignid: z.string(),
	campaignname: z.string(),
	growthhack: z.string(),
	friendemail: z.string(),
	friendname: z.string(),
	friendprofileimage: z.string(),
	fraudsignals: z.array(z.string()).describe("Fraud signal codes recorded when the reward was created (docs/fraud.md)"),
	reversed: z.boolean().describe("True once a refund took back part or all of the reward"),
	reversedamount: z.string().describe('Amount, as TEXT ("0", "2.5"): what refunds took back; `reward` is what is left'),
	payoutid: z.string().describe("Stripe rewards: the customer balance transaction that paid it (docs/stripe.md); empty otherwise"),
});

/** Every balance figure is a JSON number with at most two decimals (docs/api.md, "Amounts in answers"). */
const buckets = {
	total: z.number().describe("Amount, as a NUMBER (at most two decimals)"),
	claimed: z.number().describe("Amount, as a NUMBER (at most two decimals)"),
	pending: z.number().describe("Amount, as a NUMBER (at most two decimals)"),
	approved: z.number().describe("Amount, as a NUMBER (at most two decimals)"),
	owed: z.number().describe("Unpaid clawbacks: redeemed credit a refund took back (docs/rewards.md)"),
};

const balanceRecord = z.object({
	rewardunit: z.string(),
	...buckets,
	growthhacks: z.array(
		z.object({
			growthhack: z.string(),
			rewardunit: z.string(),
			...buckets,
			campaigns: z.array(
				z.object({ campaignid: z.number(), campaignname: z.string(), growthhack: z.string(), rewardunit: z.string(), ...buckets }),
			),
		}),
	),
});

const campaignData = {
	appid: z.string(),
	campaignid: z.string(),
	isdefault: z
		.boolean()
		.describe("true for the app's default campaign: the one register uses when it names none and the user has no referrer"),
	campaignname: z.string(),
	offertitle: z.string().describe("Form-URL-encoded"),
	offerdescription: z.string().describe("Form-URL-encoded"),
	campaignbgcolor: z.string(),
	campaignstartdate: z.string().describe("e.g. Nov 21, 2026 10:05 PM (UTC)"),
	campaignenddate: z.string().describe("When its events stop earning rewards, as campaignstartdate; empty: no end"),
	widgetfont: z.string(),
	lastmodifieddate: z.string().describe("yyyy-mm-dd hh:mm:ss (UTC)"),
	socialactions: z.array(
		z.object({
			campaignsocialactionid: z.string(),
			socialactionid: z.string().describe("1 Facebook, 2 Twitter, 5 Mail, 14 CustomLink"),
			socialactionname: z.string(),
			sharemessage: z.string().describe("Form-URL-encoded; SHARE_URL and SHARE_CODE stand for the user's link and code"),
			sharetitle: z.string(),
			shareimageurl: z.string(),
			displayorder: z.string(),
			sharemessagetype: z.number(),
		}),
	),
	customdomain: z.string(),
	rewardtype: z.string(),
	showleaderboard: z.boolean().describe("true: the share page shows the user's rank among this month's referrers (docs/rewards.md)"),
	rewardrules: z.array(
		z.object({
			campaignid: z.number(),
			rewardusertype: z.string(),
			eventname: z.string(),
			reward: z.number(),
			rewardunit: z.string(),
			rewardfrequency: z.number(),
			mintranvalue: z.number(),
			maxrewardamount: z.number(),
			categories: z.unknown().describe("The categories the rule is limited to, as stored (docs/rewards.md); null: every one"),
			inclusionsandexclusions: z.array(z.unknown()).describe("Products included or excluded: {type: include|exclude, productid}"),
			tiers: z
				.array(z.object({ fromcount: z.number(), reward: z.number() }))
				.describe("Referrer rules: from the fromcount-th reward on, each is worth reward (docs/rewards.md, Tiers); [] for none"),
			recurringmonths: z.number().describe("Only events within this many calendar months of the friend's first one earn; 0: no window"),
			milestone: z.number().describe("Referrer rules: one reward when the N-th distinct friend has the event; 0: not a milestone"),
		}),
	),
};

const userSummary = {
	userkey: z.string(),
	referralcode: z.string(),
	shareurl: z.string(),
	hasreferrer: z.boolean(),
	referrercode: z.string(),
	saascampaignid: z.string(),
};

/** Success body of each operation by name; an operation missing here is documented with the bare envelope. */
export const operationResponses: Record<string, z.ZodType> = {
	getcampaigndata: ok(campaignData),
	campaignterms: ok({}).describe("`message` holds the terms, form-URL-encoded"),
	register: ok({ ...userSummary, isexistinguser: z.boolean() }),
	updateuser: ok({}),
	applyreferrercode: ok({}),
	validatereferrercode: ok({ referrercode: z.string(), name: z.string() }),
	registerconversionevent: ok({
		duplicate: z.boolean().describe("true when this customid was already recorded (for the same user, event name and value)"),
		rewardscreated: z
			.number()
			.int()
			.describe("Rewards this call created; 0 for an event no active rule matches (the message names the campaign's event names)"),
	}),
	getuserbalance: ok({ userbalance: z.array(balanceRecord) }),
	getfriendsandrewards: ok({
		friends: z.array(
			z.object({
				userkey: z.string(),
				email: z.string(),
				useraccountid: z.string(),
				name: z.string(),
				profileimage: z.string(),
				status: z.string(),
				regdate: z.string(),
				earnedrewards: z.array(reward).describe("The friend's newest 100 rewards, newest first"),
				earnedrewardstotal: z.number().int().describe("How many rewards the friend earned in all"),
			}),
		),
		totalfriends: z.number().int(),
		convertedfriends: z.number().int(),
		pageindex: z.number().int(),
		pagesize: z.number().int(),
	}),
	redeemrewards: ok({ redeemed: z.number().describe("Amount, as a NUMBER (at most two decimals): what this call redeemed") }),
	changerewardstatus: ok({}),
	checkrewardstatus: ok({
		rewarddtlid: z.string(),
		rewardstatus: reward.shape.rewardstatus,
		comment: z.string(),
		fraudsignals: reward.shape.fraudsignals,
		payoutid: reward.shape.payoutid,
		statuscode: z.literal(1),
	}),
	invokeoutreach: ok({
		userkey: z.string(),
		shareurl: z.string(),
		referralcode: z.string(),
		isExistingUser: z.boolean(),
		hasReferrer: z.boolean(),
		statuscode: z.literal(1),
	}),
	remindfriend: ok({}),
	reverseconversionevent: ok({
		customid: z.string(),
		refundvalue: z.number().nullable().describe("This refund's part of the transaction value (a full reversal: what was left)"),
		refunded: z.number().nullable().describe("Refunded in total"),
		transactionvalue: z.number().nullable(),
		full: z.boolean(),
		duplicate: z.boolean().describe("true when this refund was already applied"),
		rewards: z.array(z.looseObject({ rewarddtlid: z.string(), userkey: z.string() })),
	}),
	getsharepage: ok({
		url: z.url().describe("Signed link to the user's referral page"),
		expiresat: z.iso.datetime().describe("When the link stops working (one hour)"),
	}),
	getleaderboard: ok({
		leaderboard: z
			.array(
				z.object({
					rank: z.number().int().describe("1 for the first; no two referrers share a rank (ties go to who reached the count first)"),
					userkey: z.string(),
					displayname: z.string().describe('First name and the initial of the last ("Ann L."), or "A referrer"'),
					friendsconverted: z
						.number()
						.int()
						.describe("Distinct friends with a rewarded (not rejected, not fully reversed) event in the period"),
					earned: z.number().describe("What the referrer's rewards of those events are worth after refunds"),
				}),
			)
			.describe("The top of the board, best first"),
		user: z
			.object({
				rank: z.number().int().nullable().describe("null while the user has no friend counted in the period"),
				friendsconverted: z.number().int(),
			})
			.optional()
			.describe("Where `userkey` stands, when it was given"),
	}),
};

/** The bare success envelope, for an operation without a shape in operationResponses. */
export const genericSuccess = z.looseObject({ success: z.literal(true), message: z.string() });
