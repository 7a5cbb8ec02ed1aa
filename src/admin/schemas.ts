import { z } from "zod";
import { DEFAULT_NAME_STYLE, LEADERBOARD_NAME_STYLES } from "../domain/display-name";
import { exactOrigin } from "../domain/frame-origin";
import { isTimeZone } from "../domain/time-zone";
import { normalizeUnit, UNIT_EXPECTED } from "../domain/units";
import { DEFAULT_VELOCITY_THRESHOLD, FRAUD_SIGNALS } from "../fraud/signals";

/** Request bodies of the admin API (plain JSON, exact lower-case names). */

const url = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).max(2000);
const number = z.union([
	z.number(),
	z
		.string()
		.trim()
		.regex(/^-?\d+(\.\d+)?$/, "must be a number")
		.transform(Number),
]);
const int = z.union([z.number().int(), z.string().trim().regex(/^\d+$/, "must be an integer").transform(Number)]);

export const createAppSchema = z.object({
	name: z.string().trim().min(1, "is required").max(200),
	landingurl: url.nullish(),
	webhookurl: url.nullish(),
	emailsender: z.email("must be an email address").nullish(),
});

/** The fields of a Stripe connection besides its key (docs/stripe.md). */
const stripeConnectionFields = {
	webhooksecret: z
		.string()
		.trim()
		.regex(/^whsec_[A-Za-z0-9+/=]{8,}$/, "must be the endpoint's signing secret (whsec_...)"),
	eventname: z.string().trim().min(1, "must not be empty").max(100).default("Transaction"),
	apiurl: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).nullish(),
};

/** An app's Stripe connection (docs/stripe.md); null disconnects. */
export const stripeSettingsSchema = z
	.object({
		secretkey: z
			.string()
			.trim()
			.regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]{8,}$/, "must be a Stripe secret or restricted key (sk_test_..., sk_live_..., rk_...)"),
		...stripeConnectionFields,
	})
	.nullable();

/** The test mode's Stripe connection (docs/test-mode.md): the same shape, with a test key only. */
export const testStripeSettingsSchema = z
	.object({
		secretkey: z
			.string()
			.trim()
			.regex(
				/^(sk|rk)_test_[A-Za-z0-9]{8,}$/,
				"must be a Stripe test key (sk_test_... or rk_test_...): test rewards never move real money",
			),
		...stripeConnectionFields,
	})
	.nullable();

/** `POST /apps/{appid}/testkeys`: `rotate: true` replaces an existing test pair (without it, 409 testkeys_exist). */
export const testKeysSchema = z.object({ rotate: z.boolean().default(false) });

export const updateAppSchema = createAppSchema.partial().extend({
	stripe: stripeSettingsSchema.optional(),
	teststripe: testStripeSettingsSchema.optional(),
	/** Who may frame the hosted referral page; stored as an exact origin (no wildcard); null resets to the landing URL's origin. */
	frameorigin: url
		.refine((v) => exactOrigin(v) !== null, "must be an exact origin (scheme, host, port) without wildcards")
		.transform((v) => exactOrigin(v) ?? "")
		.nullish(),
	/** The IANA time zone the app's analytics count days in (issue 24 item 6); checked against what Intl knows. */
	timezone: z.string().trim().refine(isTimeZone, "must be an IANA time zone name such as Europe/Paris or UTC").optional(),
	/** The app's logo on its share page, widget and emails (docs/messages.md): https only, as mail clients load it; null removes it. */
	logourl: z
		.url({ protocol: /^https$/, error: "must be an https URL of an image" })
		.max(2000, "must be at most 2000 characters")
		.transform((v) => new URL(v).href)
		.nullish(),
	/** The app's accent colour, #rrggbb (or #rgb, stored as #rrggbb, lower case); null: the service's own. */
	accentcolor: z
		.string()
		.trim()
		.regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, "must be a hex colour such as #1a56db")
		.transform((v) => (v.length === 4 ? `#${[...v.slice(1)].map((d) => d + d).join("")}` : v).toLowerCase())
		.nullish(),
	/** The campaign new users join when register names none and they have no referrer (must be one of the app's). */
	defaultcampaignid: int.pipe(z.number().int().positive("must be a campaign id")).optional(),
	/** Members must sign in to the dashboard with a passkey (docs/operators.md "Passkeys"); owners only, as every setting. */
	requirepasskeys: z.boolean("must be true or false").optional(),
});

const capitalized = <T extends string>(values: readonly [T, ...T[]]) =>
	z
		.string()
		.transform((v) => values.find((allowed) => allowed.toLowerCase() === v.trim().toLowerCase()) ?? v)
		.pipe(z.enum(values));

/** A product id or category name as registerconversionevent accepts them (at most 100 characters). */
const productName = z.string().trim().min(1, "must not be empty").max(100, "must be at most 100 characters");

export const rewardRuleSchema = z
	.object({
		/** On PATCH: the rule to update in place (docs/rewards.md, "Rule identity"); absent for a new rule. */
		ruleid: int.pipe(z.number().int().positive()).optional(),
		rewardusertype: capitalized(["Friend", "Referrer"]),
		eventname: z.string().trim().min(1, "is required").max(100),
		reward: number.pipe(z.number().nonnegative().max(1e9)),
		rewardunit: z
			.string()
			.trim()
			.min(1, "is required")
			.transform((v, ctx) => {
				if (v === "%") return v;
				const unit = normalizeUnit(v);
				if (unit === null) ctx.addIssue({ code: "custom", message: `${UNIT_EXPECTED}, or % for a percent of the transaction value` });
				return unit ?? v;
			}),
		/** Absent: 1 for a Signup rule (a friend signs up once; each extra Signup customid must not pay again), else 0 (no limit). */
		rewardfrequency: int.pipe(z.number().int().min(0).max(1e6)).optional(),
		mintranvalue: number.pipe(z.number().nonnegative()).default(0),
		maxrewardamount: number.pipe(z.number().nonnegative()).default(0),
		/** The categories the rule is limited to (docs/rewards.md, "Products and categories"); null or [] for every one. A name alone is a list of one. */
		categories: z
			.union([productName, z.array(productName).max(100, "at most 100 categories")])
			.nullish()
			.transform((v) => (typeof v === "string" ? [v] : (v ?? null))),
		/** Products included or excluded (docs/rewards.md, "Products and categories"); an excluded product never fires the rule. */
		inclusionsandexclusions: z
			.array(
				z.object({
					type: z
						.string()
						.transform((v) => v.trim().toLowerCase())
						.pipe(z.enum(["include", "exclude"], { error: "must be include or exclude" })),
					productid: productName,
				}),
			)
			.max(1000, "at most 1000 entries")
			.default([]),
		/** Referrer rules: the n-th reward is worth the tier with the largest fromcount <= n (docs/rewards.md, "Tiers"). */
		tiers: z
			.array(
				z.object({
					fromcount: int.pipe(z.number().int().min(2, "must be 2 or more").max(1e6)),
					reward: number.pipe(z.number().positive("must be above 0").max(1e9)),
				}),
			)
			.max(20, "at most 20 tiers")
			.refine(
				(tiers) => tiers.every((t, i) => i === 0 || t.fromcount > (tiers[i - 1]?.fromcount ?? 0)),
				"fromcount must increase from tier to tier",
			)
			.default([]),
		/** Only events within this many calendar months of the friend's first one earn (docs/rewards.md, "Recurring windows"); 0: none. */
		recurringmonths: int.pipe(z.number().int().min(0).max(1200)).default(0),
		/** Referrer rules with a fixed amount: one reward when the N-th distinct friend has the event (docs/rewards.md, "Milestones"). */
		milestone: int.pipe(z.number().int().min(0).max(1e6)).default(0),
	})
	.superRefine((rule, ctx) => {
		if (rule.tiers.length > 0 && rule.rewardusertype !== "Referrer") {
			ctx.addIssue({ code: "custom", path: ["tiers"], message: "are only for Referrer rules" });
		}
		if (rule.tiers.length > 0 && rule.reward <= 0)
			ctx.addIssue({ code: "custom", path: ["reward"], message: "must be above 0 on a tiered rule" });
	})
	.superRefine((rule, ctx) => {
		if (rule.milestone === 0) return;
		if (rule.rewardusertype !== "Referrer") ctx.addIssue({ code: "custom", path: ["milestone"], message: "is only for Referrer rules" });
		if (rule.rewardunit === "%") ctx.addIssue({ code: "custom", path: ["milestone"], message: "needs a fixed amount, not a %" });
		if (rule.tiers.length > 0) ctx.addIssue({ code: "custom", path: ["milestone"], message: "cannot have tiers" });
	})
	.transform((rule) => ({
		...rule,
		rewardfrequency: rule.rewardfrequency ?? (rule.eventname.toLowerCase() === "signup" ? 1 : 0),
	}));

export const socialActionSchema = z.object({
	socialactionid: z.union([z.string().trim().min(1), z.number().int()]).transform(String),
	socialactionname: z.string().trim().min(1, "is required").max(100),
	sharemessage: z.string().max(5000).default(""),
	sharetitle: z.string().max(500).default(""),
	shareimageurl: z.string().max(2000).default(""),
	displayorder: int.pipe(z.number().int().min(0)).default(0),
	sharemessagetype: int.pipe(z.number().int().min(0)).default(0),
});

const campaignFields = {
	campaignname: z.string().trim().min(1, "is required").max(200),
	offertitle: z.string().max(500).default(""),
	offerdescription: z.string().max(5000).default(""),
	campaignbgcolor: z
		.string()
		.regex(/^#[0-9a-fA-F]{6}$/, "must be a colour as #rrggbb")
		.default("#ffffff"),
	campaignstartdate: z.iso
		.datetime({ offset: true, error: "must be an ISO-8601 date-time" })
		.or(z.iso.date())
		.transform((v) => new Date(v).toISOString())
		.optional(),
	/** The campaign's end (its events earn nothing from then on); null: no end. */
	campaignenddate: z.iso
		.datetime({ offset: true, error: "must be an ISO-8601 date-time" })
		.or(z.iso.date())
		.transform((v) => new Date(v).toISOString())
		.nullable()
		.default(null),
	widgetfont: z.string().max(100).default(""),
	customdomain: z
		.string()
		.trim()
		.toLowerCase()
		.regex(/^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(:\d{1,5})?$|^$/, "must be a host name such as refer.example.com")
		.default(""),
	rewardtype: int.pipe(z.number().int().min(0).max(3, "must be 0, 1, 2 or 3")).default(3),
	terms: z.string().max(50_000).default(""),
	distribution: z.enum(["InstoreCredits", "Coupon", "Stripe"]).default("InstoreCredits"),
	holddays: int.pipe(z.number().int().min(0).max(365)).default(0),
	autoapprove: z.boolean().default(true),
	growthhack: z.string().trim().min(1).max(100).default("SaaS_Referrals"),
	currency: z
		.string()
		.transform((v, ctx) => {
			const unit = normalizeUnit(v);
			if (unit === null) ctx.addIssue({ code: "custom", message: UNIT_EXPECTED });
			return unit ?? v;
		})
		.default("USD"),
	// Fraud settings (docs/fraud.md): null = every signal makes a reward Suspicious.
	suspicioussignals: z
		.array(z.enum(FRAUD_SIGNALS, { error: `must be one of ${FRAUD_SIGNALS.join(", ")}` }))
		.max(FRAUD_SIGNALS.length)
		.transform((codes) => FRAUD_SIGNALS.filter((code) => codes.includes(code)))
		.nullable()
		.default(null),
	velocitythreshold: int.pipe(z.number().int().min(0).max(1_000_000)).default(DEFAULT_VELOCITY_THRESHOLD),
	// The user's rank among this month's referrers on the share page (docs/rewards.md, "Leaderboards").
	showleaderboard: z.boolean().default(false),
	// How referrers are named on the public board (issue 47, docs/rewards.md "Leaderboards"): "First L.", initials, or "Referrer #n".
	leaderboardnames: z
		.enum(LEADERBOARD_NAME_STYLES, { error: `must be one of ${LEADERBOARD_NAME_STYLES.join(", ")}` })
		.default(DEFAULT_NAME_STYLE),
	rewardrules: z.array(rewardRuleSchema).max(50).default([]),
	socialactions: z.array(socialActionSchema).max(50).default([]),
};

export const createCampaignSchema = z.object(campaignFields);

/** An update names only what changes: no defaults, every field optional. */
export const updateCampaignSchema = z.object(
	Object.fromEntries(
		Object.entries(campaignFields).map(([key, schema]) => [
			key,
			(schema instanceof z.ZodDefault ? (schema.unwrap() as z.ZodType) : schema).optional(),
		]),
	),
) as unknown as z.ZodType<Partial<z.output<typeof createCampaignSchema>>>;

export const addCouponsSchema = z.object({
	coupons: z
		.array(
			z.object({
				coupon: z.string().trim().min(1, "is required").max(200, "must be at most 200 characters"),
				couponname: z.string().max(200, "must be at most 200 characters").default(""),
				coupondetails: z.string().max(2000, "must be at most 2000 characters").default(""),
				couponimage: z.string().max(2000, "must be at most 2000 characters").default(""),
			}),
		)
		.min(1, "must hold at least one coupon")
		.max(1000, "at most 1000 coupons per call"),
});
