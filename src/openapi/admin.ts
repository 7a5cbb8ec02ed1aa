import { z } from "zod";
import { addCouponsSchema, createAppSchema, createCampaignSchema, updateAppSchema, updateCampaignSchema } from "../admin/schemas";

/**
 * The admin API (/admin/v1) for the OpenAPI document. Hono routes carry no
 * schema, so each route is described here; test/openapi/document.integration.test.ts
 * fails when a route of adminRoutes has no entry.
 */
export interface AdminRoute {
	method: "get" | "post" | "patch" | "put" | "delete";
	/** OpenAPI form, relative to /admin/v1: `/apps/{appid}`. */
	path: string;
	summary: string;
	body?: z.ZodType;
	query?: Record<string, z.ZodType>;
	status: number;
	response: z.ZodType;
}

const app = z.looseObject({
	appid: z.string(),
	name: z.string(),
	apikey: z.string(),
	landingurl: z.string().nullable(),
	webhookurl: z.string().nullable(),
	emailsender: z.string().nullable(),
	frameorigin: z.string().nullable().describe("Origin allowed to frame the referral page; null: the landing URL's origin"),
	webhooksecret: z.string(),
	defaultcampaignid: z.number().nullable(),
	createdat: z.string(),
	updatedat: z.string(),
});

const campaign = z.looseObject({ campaignid: z.number(), appid: z.string(), campaignname: z.string() });
const delivery = z.looseObject({ eventid: z.string(), kind: z.string(), type: z.string(), status: z.string(), attempts: z.number() });

export const adminApi: AdminRoute[] = [
	{
		method: "post",
		path: "/apps",
		summary: "Create an app (tenant); answers its keys once",
		body: createAppSchema,
		status: 201,
		response: z.object({ appid: z.string(), apikey: z.string(), privatekey: z.string(), webhooksecret: z.string() }),
	},
	{ method: "get", path: "/apps", summary: "List apps", status: 200, response: z.object({ apps: z.array(app) }) },
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
		summary: "Issue a new webhook signing secret",
		status: 200,
		response: z.object({ appid: z.string(), webhooksecret: z.string() }),
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
		summary: "List an app's campaigns",
		status: 200,
		response: z.object({ campaigns: z.array(campaign) }),
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
		method: "post",
		path: "/apps/{appid}/campaigns/{campaignid}/coupons",
		summary: "Add coupon codes to a campaign's pool",
		body: addCouponsSchema,
		status: 201,
		response: z.object({ added: z.number(), skipped: z.number(), couponsavailable: z.number() }),
	},
	{
		method: "get",
		path: "/apps/{appid}/deliveries",
		summary: "Recent webhook and email deliveries, newest first",
		query: { limit: z.number().int().min(1).max(200).default(50) },
		status: 200,
		response: z.object({ deliveries: z.array(delivery) }),
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
];
