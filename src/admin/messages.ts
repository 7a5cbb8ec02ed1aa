import { Hono } from "hono";
import { z } from "zod";
import { getCampaignWithDetails } from "../db/campaigns";
import { campaignMessages, campaignRewardEmail, deleteCampaignMessage, saveCampaignMessage, saveCampaignRewardEmail } from "../db/messages";
import { shareLinkBase } from "../domain/public-origin";
import { emailShareUrl } from "../domain/share-url";
import { ApiError, badRequest, campaignNotFound } from "../http/errors";
import { brandOf } from "../outbox/branded";
import { previewMessage } from "../outbox/emails";
import { DEFAULT_TEMPLATES } from "../outbox/template-defaults";
import {
	checkTemplate,
	isLang,
	LANGS,
	type Lang,
	MESSAGE_KINDS,
	type MessageKind,
	REWARD_EMAIL_MODES,
	type Template,
	type TemplateProblem,
	VARIABLES,
} from "../outbox/templates";
import { body } from "./body";
import { requireApp } from "./guard";
import { type AdminContext, type AdminEnv, auditEntry, diff } from "./principal";

/**
 * A campaign's editable emails (issue 34, docs/messages.md), under
 * /admin/v1/apps/{appid}/campaigns/{campaignid}/messages: read them (each
 * language's text, the campaign's or the default), save or reset one
 * language of one kind, and preview a text before saving it. A text with an
 * unknown variable is refused (400 `unknown_variable` naming the field) and
 * nothing is saved.
 */
export const messageRoutes = new Hono<AdminEnv>();

const BASE = "/apps/:appid/campaigns/:campaignid/messages";

export const templateSchema = z.object({
	subject: z.string({ error: "is required (a text)" }),
	body: z.string({ error: "is required (a text)" }),
});

/** Whether the campaign sends the reward-earned email (docs/messages.md). */
export const rewardEmailSettings = z.object({
	rewardemail: z.enum(REWARD_EMAIL_MODES, { error: `must be one of ${REWARD_EMAIL_MODES.join(", ")}` }),
});

const isKind = (v: string): v is MessageKind => (MESSAGE_KINDS as readonly string[]).includes(v);

/** The path's kind and language, or a 400 naming the one that is not known. */
function pathOf(params: { campaignid: string; kind: string; language: string }): { campaignid: number; kind: MessageKind; lang: Lang } {
	if (!/^\d{1,15}$/.test(params.campaignid)) throw campaignNotFound();
	if (!isKind(params.kind)) throw badRequest(`kind: must be one of ${MESSAGE_KINDS.join(", ")}.`, { fields: ["kind"] });
	if (!isLang(params.language)) throw badRequest(`language: must be one of ${LANGS.join(", ")}.`, { fields: ["language"] });
	return { campaignid: Number(params.campaignid), kind: params.kind, lang: params.language };
}

/** Refuses a template with problems: unknown variables first (their own code), anything else as validation_failed. */
export function refuseProblems(problems: TemplateProblem[]): void {
	if (problems.length === 0) return;
	const errors = problems.map((p) => ({ field: p.field, message: p.message }));
	const fields = [...new Set(problems.map((p) => p.field))];
	const message = problems.map((p) => `${p.field}: ${p.message}`).join("; ");
	const unknown = problems.flatMap((p) => p.unknown ?? []);
	if (unknown.length > 0) throw new ApiError(400, "unknown_variable", `${message}. Nothing was saved.`, { fields, errors, unknown });
	throw new ApiError(400, "validation_failed", `${message}. Nothing was saved.`, { fields, errors });
}

async function requireCampaign(db: D1Database, appid: string, raw: string) {
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	const campaign = await getCampaignWithDetails(db, appid, Number(raw));
	if (!campaign) throw campaignNotFound();
	return campaign;
}

const view = (kind: MessageKind, lang: Lang, own: Template | undefined) => ({
	kind,
	language: lang,
	...(own ?? DEFAULT_TEMPLATES[kind][lang]),
	custom: own !== undefined,
});

messageRoutes.get(BASE, async (c) => {
	const campaign = await requireCampaign(c.env.DB, c.req.param("appid"), c.req.param("campaignid"));
	const messages: Record<string, unknown> = {};
	for (const kind of MESSAGE_KINDS) {
		const own = await campaignMessages(c.env.DB, campaign.campaignid, kind);
		messages[kind] = {
			variables: VARIABLES[kind],
			templates: Object.fromEntries(LANGS.map((lang) => [lang, view(kind, lang, own.get(lang))])),
		};
	}
	const rewardemail = await campaignRewardEmail(c.env.DB, c.req.param("appid"), campaign.campaignid);
	return c.json({ campaignid: campaign.campaignid, rewardemail: rewardemail ?? "auto", languages: LANGS, messages });
});

messageRoutes.put("/apps/:appid/campaigns/:campaignid/rewardemail", async (c) => {
	const appid = c.req.param("appid");
	const raw = c.req.param("campaignid");
	if (!/^\d{1,15}$/.test(raw)) throw campaignNotFound();
	const { rewardemail } = await body(c.req.raw, rewardEmailSettings);
	const before = await campaignRewardEmail(c.env.DB, appid, Number(raw));
	if (before === null) throw campaignNotFound();
	const audit = auditEntry(c, appid, {
		action: "campaign.update",
		targetType: "campaign",
		targetId: raw,
		changes: diff({ rewardemail: before }, { rewardemail }),
	});
	if (!(await saveCampaignRewardEmail(c.env.DB, appid, Number(raw), rewardemail, audit))) throw campaignNotFound();
	return c.json({ rewardemail });
});

messageRoutes.put(`${BASE}/:kind/:language`, async (c) => {
	const appid = c.req.param("appid");
	const { campaignid, kind, lang } = pathOf(c.req.param());
	const template = await body(c.req.raw, templateSchema);
	// Checked before anything is read or written: a refused text changes nothing.
	refuseProblems(checkTemplate(kind, template));
	const before = (await campaignMessages(c.env.DB, campaignid, kind)).get(lang);
	const audit = auditEntry(c, appid, {
		action: "campaign.message_update",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: diff({ [`${kind}.${lang}`]: before ?? null }, { [`${kind}.${lang}`]: template }),
	});
	if (!(await saveCampaignMessage(c.env.DB, appid, campaignid, kind, lang, template, audit))) throw campaignNotFound();
	return c.json(view(kind, lang, template));
});

messageRoutes.delete(`${BASE}/:kind/:language`, async (c) => {
	const appid = c.req.param("appid");
	const { campaignid, kind, lang } = pathOf(c.req.param());
	const campaign = await requireCampaign(c.env.DB, appid, String(campaignid));
	const before = (await campaignMessages(c.env.DB, campaign.campaignid, kind)).get(lang);
	const audit = auditEntry(c, appid, {
		action: "campaign.message_reset",
		targetType: "campaign",
		targetId: String(campaignid),
		changes: diff({ [`${kind}.${lang}`]: before ?? null }, { [`${kind}.${lang}`]: null }),
	});
	// Nothing to remove is no error: the default applies either way.
	await deleteCampaignMessage(c.env.DB, appid, campaign.campaignid, kind, lang, audit);
	return c.json(view(kind, lang, undefined));
});

/**
 * The sample's share link as the real email would carry it now (issue 48: the preview is what is sent). Every
 * email's link is built on the deployment's configured base, SHARE_BASE_URL else PUBLIC_ORIGIN, never on a
 * request (issue 47: ledger/reward-emails.ts, operations/outreach.ts); without one its line is left out.
 */
const sampleShareLink = (c: AdminContext) => emailShareUrl(SAMPLE_CODE, "", shareLinkBase(c.env));
const SAMPLE_CODE = "ANN123";

/** The email a text would make, with the campaign's offer, the app's brand and a sample recipient; nothing is saved. */
messageRoutes.post(`${BASE}/:kind/:language/preview`, async (c) => {
	const appid = c.req.param("appid");
	const { kind, lang } = pathOf(c.req.param());
	const template = await body(c.req.raw, templateSchema);
	refuseProblems(checkTemplate(kind, template));
	const [app, campaign] = await Promise.all([requireApp(c.env.DB, appid), requireCampaign(c.env.DB, appid, c.req.param("campaignid"))]);
	const brand = brandOf(app, c.env);
	return c.json({ kind, language: lang, ...previewMessage(kind, template, campaign, brand, lang, sampleShareLink(c)) });
});
