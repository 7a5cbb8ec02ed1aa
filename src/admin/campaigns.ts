import { Hono } from "hono";
import { updateApp } from "../db/apps";
import { listCampaignsWithDetails } from "../db/campaign-list";
import { type Campaign, getCampaign, getCampaignWithDetails, insertCampaign, updateCampaign } from "../db/campaigns";
import { addCoupons, countFreeCoupons } from "../db/coupons";
import { nowIso } from "../domain/dates";
import { forgetCachedApp } from "../http/auth";
import { badRequest, campaignNotFound } from "../http/errors";
import { body } from "./body";
import { requireApp } from "./guard";
import { pageOf } from "./paging";
import { type AdminEnv, auditEntry, diff } from "./principal";
import { addCouponsSchema, createCampaignSchema, updateCampaignSchema } from "./schemas";
import { poolIsLive } from "./test-mode";

/** Campaigns and their coupon pools (admin API, under /admin/v1); every change with its audit entry. */
export const campaignRoutes = new Hono<AdminEnv>();

function requireCampaignId(raw: string): number {
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	return Number(raw);
}

function campaignView(campaign: Campaign) {
	const { createdAt, updatedAt, autoapprove, ...rest } = campaign;
	return { ...rest, autoapprove, createdat: createdAt, updatedat: updatedAt };
}

campaignRoutes.post("/apps/:appid/campaigns", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const { rewardrules, socialactions, campaignstartdate, ...fields } = await body(c.req.raw, createCampaignSchema);
	const values = { ...fields, campaignstartdate: campaignstartdate ?? nowIso() };
	// The new campaign's id is read inside the batch that creates it (db/campaigns.ts).
	const audit = auditEntry(c, app.appid, {
		action: "campaign.create",
		targetType: "campaign",
		targetId: null,
		changes: diff({}, { ...values, rewardrules, socialactions }),
	});
	const campaignid = await insertCampaign(c.env.DB, app.appid, values, rewardrules, socialactions, audit);
	forgetCachedApp(app.appid);
	return c.json({ campaignid }, 201);
});

campaignRoutes.get("/apps/:appid/campaigns", async (c) => {
	const app = await requireApp(c.env.DB, c.req.param("appid"));
	const { limit, cursor } = pageOf(c);
	const campaigns = await listCampaignsWithDetails(c.env.DB, app.appid, limit, /^\d{1,15}$/.test(cursor ?? "") ? Number(cursor) : 0);
	return c.json({
		campaigns: campaigns.map(campaignView),
		nextcursor: campaigns.length === limit ? String(campaigns[campaigns.length - 1]!.campaignid) : null,
	});
});

campaignRoutes.get("/apps/:appid/campaigns/:campaignid", async (c) => {
	const campaign = await getCampaignWithDetails(c.env.DB, c.req.param("appid"), requireCampaignId(c.req.param("campaignid")));
	if (!campaign) throw campaignNotFound();
	const couponsavailable = await countFreeCoupons(c.env.DB, campaign.campaignid, poolIsLive(c));
	return c.json({ ...campaignView(campaign), couponsavailable });
});

campaignRoutes.patch("/apps/:appid/campaigns/:campaignid", async (c) => {
	const appid = c.req.param("appid");
	const campaignid = requireCampaignId(c.req.param("campaignid"));
	const input = await body(c.req.raw, updateCampaignSchema);
	const { rewardrules, socialactions, ...fields } = input;
	const before = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	if (!before) throw campaignNotFound();
	const audit = auditEntry(c, appid, {
		action: "campaign.update",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: diff(campaignView(before), input),
	});
	const updated = await updateCampaign(c.env.DB, appid, campaignid, fields, rewardrules, socialactions, audit);
	if (!updated.ok && updated.reason === "campaign_not_found") throw campaignNotFound();
	if (!updated.ok) throw badRequest(`rewardrules: no active rule ${updated.ruleid} in this campaign.`, { fields: ["rewardrules"] });
	const campaign = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	return c.json(campaign ? campaignView(campaign) : null);
});

campaignRoutes.post("/apps/:appid/campaigns/:campaignid/coupons", async (c) => {
	const appid = c.req.param("appid");
	const campaign = await getCampaign(c.env.DB, appid, requireCampaignId(c.req.param("campaignid")));
	if (!campaign) throw campaignNotFound();
	const { coupons } = await body(c.req.raw, addCouponsSchema);
	const live = poolIsLive(c);
	const audit = auditEntry(c, appid, {
		action: "campaign.coupons_add",
		targetType: "campaign",
		targetId: String(campaign.campaignid),
		changes: { couponssubmitted: { before: null, after: coupons.length }, ...(live ? {} : { mode: { before: null, after: "test" } }) },
	});
	const added = await addCoupons(c.env.DB, campaign.campaignid, coupons, audit, live);
	return c.json(
		{ added, skipped: coupons.length - added, couponsavailable: await countFreeCoupons(c.env.DB, campaign.campaignid, live) },
		201,
	);
});

/**
 * Makes the campaign the app's default (the one register uses when it names
 * none and the user has no referrer): a campaign decision, so a manager's
 * right (docs/operators.md), apart from the app's other settings (owner).
 */
campaignRoutes.post("/apps/:appid/campaigns/:campaignid/default", async (c) => {
	const appid = c.req.param("appid");
	const campaignid = requireCampaignId(c.req.param("campaignid"));
	const app = await requireApp(c.env.DB, appid);
	const audit = auditEntry(c, appid, {
		action: "app.update",
		targetType: "app",
		targetId: appid,
		changes: { defaultcampaignid: { before: app.defaultCampaignId, after: campaignid } },
	});
	// The write checks that the campaign is the app's own (db/apps.ts): nothing changes otherwise.
	if (!(await updateApp(c.env.DB, appid, { defaultCampaignId: campaignid }, audit))) throw campaignNotFound();
	forgetCachedApp(appid);
	return c.json({ appid, defaultcampaignid: campaignid });
});
