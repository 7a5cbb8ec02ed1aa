import { z } from "zod";
import { LOGO_CONTENT_TYPES, LOGO_MAX_BYTES } from "../domain/logo";
import type { AdminRoute } from "./admin-route";

/** Stripe events that paid nothing for a reason the operator acts on (docs/stripe.md "What the operator sees"). */
const stripeCases = z
	.array(
		z.object({
			eventid: z.string(),
			kind: z.string().describe("unlinked_email, dispute_opened, dispute_lost, dispute_won, ..."),
			customer: z.string().nullable(),
			userkey: z.string().nullable().describe("The user the case names (e.g. whose email the payment carried)"),
			detail: z.string().nullable(),
			at: z.string(),
		}),
	)
	.describe("The 20 most recent cases, newest first");
/** An app's Stripe connection (live or test) on the app's view: never its secrets. */
const stripeConnection = (webhookurl: string) =>
	z
		.looseObject({
			connected: z.boolean(),
			secretkeylast4: z.string().optional(),
			eventname: z.string().optional(),
			webhookurl: z.string().describe(webhookurl),
			cases: stripeCases.optional(),
		})
		.optional();

/** An app as the admin API answers it (its secrets only where the caller may see them). */
export const app = z.looseObject({
	appid: z.string(),
	name: z.string(),
	apikey: z.string(),
	landingurl: z.string().nullable(),
	webhookurl: z.string().nullable(),
	emailsender: z.string().nullable(),
	frameorigin: z.string().nullable().describe("Origin allowed to frame the referral page; null: the landing URL's origin"),
	logourl: z
		.string()
		.nullable()
		.describe(
			"The app's logo on its share page, widget and emails (docs/messages.md): an https URL, or the URL of a logo uploaded with PUT /admin/v1/apps/{appid}/logo",
		),
	accentcolor: z.string().nullable().describe("The app's accent colour (#rrggbb) on its share page, widget and emails"),
	webhooksecret: z.string().nullable().describe("null unless the caller is an owner or the superuser"),
	defaultcampaignid: z.number().nullable(),
	requirepasskeys: z.boolean().describe("Members sign in to the dashboard with a passkey (docs/operators.md, Passkeys)"),
	testapikey: z
		.string()
		.nullable()
		.optional()
		.describe("The test pair's apikey (docs/test-mode.md); null until the app has test keys; on the single app's view"),
	stripe: stripeConnection("The address to paste into Stripe's dashboard as the webhook endpoint").describe(
		"The app's Stripe connection, never its secrets (docs/stripe.md); on the single app's view",
	),
	teststripe: stripeConnection("The address to paste into Stripe's test-mode dashboard as the webhook endpoint").describe(
		"The test mode's Stripe connection (an sk_test_ key), paying only test rewards (docs/test-mode.md)",
	),
	createdat: z.string(),
	updatedat: z.string(),
});

/** An app's uploaded logo (docs/messages.md "Brand"). */
export const logoApi: AdminRoute[] = [
	{
		method: "put",
		path: "/apps/{appid}/logo",
		summary: `Upload the app's logo (manager): the image's bytes as the body, a PNG, JPEG or WebP of at most ${LOGO_MAX_BYTES / 1024} KB, its type judged by its content (SVG refused). Sets logourl to where this deployment serves it (/logos/..., cached as immutable); the logo it replaces is deleted`,
		rawBody: { types: Object.values(LOGO_CONTENT_TYPES), description: "The image file's bytes, with its Content-Type" },
		status: 200,
		response: z.object({
			appid: z.string(),
			logourl: z.string().describe("Where the logo is served: <PUBLIC_ORIGIN>/logos/<appid>/<sha-256>.<png|jpg|webp>"),
			contenttype: z.string(),
			bytes: z.number(),
		}),
		errors: {
			"413": "The image is larger than the cap (payload_too_large)",
			"415": "Not a PNG, JPEG or WebP by its content, an SVG, or a Content-Type that contradicts the bytes (unsupported_media_type)",
		},
	},
	{
		method: "delete",
		path: "/apps/{appid}/logo",
		summary: "Remove the app's logo (manager), uploaded or an https URL; an uploaded file is deleted",
		status: 200,
		response: z.object({ appid: z.string(), logourl: z.null() }),
	},
];
