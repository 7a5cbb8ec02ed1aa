import { Hono } from "hono";
import { appLayout } from "../db/app-layout";
import { updateApp } from "../db/apps";
import { deleteUnreferencedCampaign, setCampaignArchived } from "../db/campaign-archive";
import { listCampaignsWithDetails } from "../db/campaign-list";
import { type Campaign, getCampaign, getCampaignWithDetails, insertCampaign, updateCampaign } from "../db/campaigns";
import { addCoupons, countFreeCoupons } from "../db/coupons";
import { recordedAmong } from "../db/event-grants";
import { shardPool } from "../db/shards";
import { nowIso } from "../domain/dates";
import { EVENT_GATE_SHARDS } from "../domain/gate-shard";
import { forgetCachedApp } from "../http/auth";
import { ApiError, badRequest, campaignArchived, campaignNotFound } from "../http/errors";
import { gateStub } from "../ledger/event-gate";
import { body } from "./body";
import { requireApp } from "./guard";
import { pageOf } from "./paging";
import { type AdminContext, type AdminEnv, auditEntry, diff } from "./principal";
import { addCouponsSchema, createCampaignSchema, updateCampaignSchema } from "./schemas";
import { poolIsLive } from "./test-mode";

/**
 * Whether a conversion naming the campaign is claimed in its gate and not yet granted (issue 49): it holds the
 * campaign as D1's waiting events do. A gate's pending event whose row is in D1 already was granted (its
 * completion pass has not settled it yet).
 */
async function conversionsInFlight(env: Env, appid: string, campaignid: number): Promise<boolean> {
	const pending = await Promise.all(
		Array.from({ length: EVENT_GATE_SHARDS }, (_, shard) => gateStub(env, shard).pendingOfCampaign(appid, campaignid, 100)),
	);
	const events = pending.flat().map((customid) => ({ appid, customid }));
	if (events.length === 0) return false;
	return (await recordedAmong(env.DB, events)).size < events.length;
}

/** Campaigns and their coupon pools (admin API, under /admin/v1); every change with its audit entry. */
export const campaignRoutes = new Hono<AdminEnv>();

function requireCampaignId(raw: string): number {
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	return Number(raw);
}

function campaignView(campaign: Campaign) {
	const { createdAt, updatedAt, autoapprove, archivedAt, ...rest } = campaign;
	return { ...rest, autoapprove, archived: archivedAt !== null, archivedat: archivedAt, createdat: createdAt, updatedat: updatedAt };
}

/** `?archived=true|false` of the list: archived campaigns only, or active ones only; absent: both. */
function archivedFilter(raw: string | undefined): boolean | null {
	if (raw === undefined || raw === "") return null;
	if (raw === "true" || raw === "false") return raw === "true";
	throw badRequest("archived: must be true or false.", { fields: ["archived"] });
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
	const archived = archivedFilter(c.req.query("archived"));
	const after = /^\d{1,15}$/.test(cursor ?? "") ? Number(cursor) : 0;
	const campaigns = await listCampaignsWithDetails(c.env.DB, app.appid, limit, after, archived);
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
	const campaign = await getCampaign(c.env.DB, appid, campaignid);
	if (campaign?.archivedAt) throw campaignArchived(campaign);
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

/** The app's default campaign cannot be archived or deleted: register puts new users into it. */
const isDefault = (campaignid: number) =>
	new ApiError(
		409,
		"campaign_in_use",
		`Campaign ${campaignid} is the app's default campaign (new users without a referrer join it): make another campaign the default first.`,
		{ campaignid, referencedby: "default" },
	);

/**
 * Archives a campaign (issue 48; docs/operators.md, "Building a campaign"):
 * it records no new conversion (409 campaign_archived), keeps its rewards
 * and history, and the console hides it from its pickers. Repeating it
 * changes nothing and records nothing.
 */
campaignRoutes.post("/apps/:appid/campaigns/:campaignid/archive", (c) => archiveRoute(c, true));
campaignRoutes.post("/apps/:appid/campaigns/:campaignid/restore", (c) => archiveRoute(c, false));

async function archiveRoute(c: AdminContext, archive: boolean) {
	const appid = c.req.param("appid") ?? "";
	const campaignid = requireCampaignId(c.req.param("campaignid") ?? "");
	const now = nowIso();
	const audit = auditEntry(c, appid, {
		action: archive ? "campaign.archive" : "campaign.restore",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: { archivedat: archive ? { before: null, after: now } : { before: "(archived)", after: null } },
	});
	const outcome = await setCampaignArchived(c.env.DB, appid, campaignid, archive, now, audit);
	if (!outcome.ok && outcome.reason === "campaign_is_default") throw isDefault(campaignid);
	if (!outcome.ok) throw campaignNotFound();
	forgetCachedApp(appid);
	const campaign = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	if (!campaign) throw campaignNotFound();
	return c.json(campaignView(campaign));
}

/** The shard pool when the app's projection rows are in the shards (issue 50 phase 2b-1), else null. */
async function shardsOf(env: Env, appid: string) {
	return (await appLayout(env.DB, appid)) === "sharded" ? shardPool(env) : null;
}

const REFERENCE_WORDS = {
	default: "it is the app's default campaign (new users without a referrer join it): make another campaign the default first",
	users: "users have joined it",
	conversions: "conversions against it are still being granted",
	rewards: "it has granted rewards",
} as const;

/**
 * Deletes a campaign that nothing references (no user in it, no conversion,
 * no reward, not the default) with its rules, social actions, coupon pool
 * and emails; otherwise 409 campaign_in_use naming what references it
 * (archive it instead: its history stays).
 */
campaignRoutes.delete("/apps/:appid/campaigns/:campaignid", async (c) => {
	const appid = c.req.param("appid");
	const campaignid = requireCampaignId(c.req.param("campaignid"));
	const before = await getCampaignWithDetails(c.env.DB, appid, campaignid);
	if (!before) throw campaignNotFound();
	const audit = auditEntry(c, appid, {
		action: "campaign.delete",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: { campaignname: { before: before.campaignname, after: null } },
	});
	const outcome: Awaited<ReturnType<typeof deleteUnreferencedCampaign>> = (await conversionsInFlight(c.env, appid, campaignid))
		? { ok: false, reason: "referenced", by: "conversions" }
		: await deleteUnreferencedCampaign(c.env.DB, appid, campaignid, audit, await shardsOf(c.env, appid));
	if (!outcome.ok && outcome.reason === "referenced") {
		throw new ApiError(
			409,
			"campaign_in_use",
			`Campaign ${campaignid} cannot be deleted: ${REFERENCE_WORDS[outcome.by]}. Archive it instead: it then records nothing new and its history stays.`,
			{ campaignid, referencedby: outcome.by },
		);
	}
	if (!outcome.ok) throw campaignNotFound();
	forgetCachedApp(appid);
	return c.json({ campaignid, deleted: true });
});
