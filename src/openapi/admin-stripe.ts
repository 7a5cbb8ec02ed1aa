import { z } from "zod";

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
export const stripeConnection = (webhookurl: string) =>
	z
		.looseObject({
			connected: z.boolean(),
			secretkeylast4: z.string().optional(),
			eventname: z.string().optional(),
			webhookurl: z.string().describe(webhookurl),
			cases: stripeCases.optional(),
		})
		.optional();
