import { z } from "zod";

/** A reward of the admin API's lists, as the OpenAPI document shows it. */
export const adminReward = z.looseObject({ rewarddtlid: z.string(), userkey: z.string(), rewardstatus: z.string() });

/** GET /apps/{appid}/rewards/{rewarddtlid}: one reward with its order id, event and Stripe payment (issue 48). */
export const rewardDetail = z.looseObject({
	reward: adminReward.extend({ customid: z.string().nullable().describe("the order id of the event; null when its ledger has none") }),
	event: z
		.looseObject({
			customid: z.string(),
			userkey: z.string(),
			eventname: z.string(),
			transactionvalue: z.number().nullable(),
			createdat: z.string(),
		})
		.nullable(),
	payment: z
		.looseObject({
			invoice: z.string().nullable(),
			paymentintent: z.string().nullable(),
			charge: z.string().nullable(),
			checkoutsession: z.string().nullable(),
			currency: z.string(),
			amount: z.number().describe("in whole units of the currency"),
			refunded: z.number(),
		})
		.nullable()
		.describe("the Stripe payment the conversion came from (docs/stripe.md); null for other conversions"),
});
