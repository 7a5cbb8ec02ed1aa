import { z } from "zod";
import { type CampaignWithDetails, getCampaign, getCampaignWithDetails } from "../db/campaigns";
import { formatCampaignStart, formatTimestamp } from "../domain/dates";
import { campaignNotFound } from "../http/errors";
import { campaignId } from "../http/fields";
import { defineOperation } from "../http/operation";
import { formUrlEncode } from "../http/request-text";

const campaignRequest = z.object({ campaignid: campaignId });

/** The campaign as `getcampaigndata` returns it: texts form-URL-encoded, dates in the decided formats. */
export function campaignDataResponse(campaign: CampaignWithDetails, defaultCampaignId: number | null) {
	return {
		appid: campaign.appid,
		campaignid: String(campaign.campaignid),
		isdefault: campaign.campaignid === defaultCampaignId,
		campaignname: campaign.campaignname,
		offertitle: formUrlEncode(campaign.offertitle),
		offerdescription: formUrlEncode(campaign.offerdescription),
		campaignbgcolor: campaign.campaignbgcolor,
		campaignstartdate: formatCampaignStart(campaign.campaignstartdate),
		campaignenddate: campaign.campaignenddate ? formatCampaignStart(campaign.campaignenddate) : "",
		widgetfont: campaign.widgetfont,
		lastmodifieddate: formatTimestamp(campaign.updatedAt),
		socialactions: campaign.socialactions.map((action) => ({
			campaignsocialactionid: String(action.campaignsocialactionid),
			socialactionid: action.socialactionid,
			socialactionname: action.socialactionname,
			sharemessage: formUrlEncode(action.sharemessage),
			sharetitle: action.sharetitle,
			shareimageurl: action.shareimageurl,
			displayorder: String(action.displayorder),
			sharemessagetype: action.sharemessagetype,
		})),
		customdomain: campaign.customdomain,
		rewardtype: String(campaign.rewardtype),
		showleaderboard: campaign.showleaderboard,
		rewardrules: campaign.rewardrules.map((rule) => ({
			campaignid: campaign.campaignid,
			rewardusertype: rule.rewardusertype,
			eventname: rule.eventname,
			reward: rule.reward,
			rewardunit: rule.rewardunit,
			rewardfrequency: rule.rewardfrequency,
			mintranvalue: rule.mintranvalue,
			maxrewardamount: rule.maxrewardamount,
			categories: rule.categories,
			inclusionsandexclusions: rule.inclusionsandexclusions,
			tiers: rule.tiers,
			recurringmonths: rule.recurringmonths,
			milestone: rule.milestone,
		})),
	};
}

/** Operation 3: the campaign's public data. */
export const getcampaigndata = defineOperation({
	schema: campaignRequest,
	async handle({ env, app }, { campaignid }) {
		const campaign = await getCampaignWithDetails(env.DB, app.campaignAppid, campaignid);
		if (!campaign) throw campaignNotFound();
		return campaignDataResponse(campaign, app.defaultCampaignId);
	},
});

/** Operation 12: the campaign's terms, form-URL-encoded, in `message`. */
export const campaignterms = defineOperation({
	schema: campaignRequest,
	async handle({ env, app }, { campaignid }) {
		const campaign = await getCampaign(env.DB, app.campaignAppid, campaignid);
		if (!campaign) throw campaignNotFound();
		return { message: formUrlEncode(campaign.terms) };
	},
});
