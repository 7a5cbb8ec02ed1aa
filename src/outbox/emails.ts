import type { Campaign, CampaignWithDetails, RewardRule, SocialAction } from "../db/campaigns";
import type { EmailPayload } from "../domain/outbox-event";
import { formatAmount } from "../rewards/money";
import { type Brand, brandedLayout, renderMessage } from "./branded";
import { html, raw, safeHref } from "./html";
import { headerText } from "./mail-headers";
import { DEFAULT_TEMPLATES, SAMPLE_VALUES, SOMEONE } from "./template-defaults";
import { type Lang, type MessageKind, pickTemplate, rewardText, type Template } from "./templates";

/** The Mail social action of a campaign (socialactionid 5, or named Mail), if any. */
export function mailAction(actions: SocialAction[]): SocialAction | undefined {
	return actions.find((a) => a.socialactionid === "5") ?? actions.find((a) => a.socialactionname.toLowerCase() === "mail");
}

/** A share message with the spec's tokens replaced by the user's link and code. */
export function fillShareTokens(message: string, shareurl: string, code: string): string {
	return message.replaceAll("SHARE_URL", shareurl).replaceAll("SHARE_CODE", code);
}

export interface OutreachEmailInput {
	to: string;
	toName: string | null;
	campaign: Pick<Campaign, "offertitle" | "offerdescription" | "campaignname">;
	mailMessage: string | null;
	shareurl: string;
	referralcode: string;
	/** The recipient's language, where known (docs/messages.md); English otherwise. */
	lang?: Lang;
	/** The campaign's own templates of this email, by language; none: the defaults. */
	templates?: ReadonlyMap<Lang, Template>;
	brand?: Brand;
	/** What the referrer earns (rewardText of the campaign's first Referrer rule). */
	reward?: string;
}

const offerOf = (campaign: OutreachEmailInput["campaign"]) => ({
	offertitle: campaign.offertitle || campaign.campaignname,
	offerdescription: campaign.offerdescription,
	campaignname: campaign.campaignname,
});

/** The outreach email: the campaign's template (or the default) filled with the user's link and code, and the Mail message. */
export function outreachEmail(input: OutreachEmailInput): EmailPayload {
	const lang = input.lang ?? "en";
	const toName = headerText(input.toName) || null;
	const { template } = pickTemplate(input.templates ?? new Map(), DEFAULT_TEMPLATES.outreach, lang);
	const values = {
		...offerOf(input.campaign),
		referrername: toName,
		sharelink: input.shareurl,
		referralcode: input.referralcode,
		reward: input.reward ?? "",
		sharemessage: input.mailMessage ? fillShareTokens(input.mailMessage, input.shareurl, input.referralcode) : "",
		appname: input.brand?.name ?? "",
	};
	return { to: input.to, toName, ...renderMessage(template, values, input.brand ?? null, lang) };
}

export interface ReminderEmailInput {
	to: string;
	toName: string | null;
	referrerName: string | null;
	campaign: Pick<Campaign, "offertitle" | "offerdescription" | "campaignname">;
	message: string | null;
	landingurl: string | null;
	lang?: Lang;
	templates?: ReadonlyMap<Lang, Template>;
	brand?: Brand;
	/** The referrer's share link and code. */
	shareurl?: string;
	referralcode?: string;
	/** What the friend earns (rewardText of the campaign's first Friend rule). */
	reward?: string;
}

/** The reminder a referrer sends a friend who has not converted yet. */
export function reminderEmail(input: ReminderEmailInput): EmailPayload {
	const lang = input.lang ?? "en";
	// Names are one line everywhere: the referrer's name is part of the subject (a header).
	const toName = headerText(input.toName) || null;
	const { template } = pickTemplate(input.templates ?? new Map(), DEFAULT_TEMPLATES.reminder, lang);
	const values = {
		...offerOf(input.campaign),
		friendname: toName,
		referrername: headerText(input.referrerName) || SOMEONE[lang],
		message: input.message,
		sharelink: input.shareurl ?? "",
		referralcode: input.referralcode ?? "",
		reward: input.reward ?? "",
		landingurl: input.landingurl,
		appname: input.brand?.name ?? "",
	};
	return { to: input.to, toName, ...renderMessage(template, values, input.brand ?? null, lang) };
}

export interface RewardEmailInput {
	to: string;
	toName: string | null;
	campaign: Pick<Campaign, "offertitle" | "offerdescription" | "campaignname">;
	/** What was earned as the recipient reads it (rewardEarnedText). */
	reward: string;
	eventname: string;
	/** The friend whose event earned a referrer's reward; null for a friend's own reward. */
	friendName: string | null;
	/** The recipient's share link ("" when the service has no share domain) and code. */
	shareurl: string;
	referralcode: string;
	lang?: Lang;
	templates?: ReadonlyMap<Lang, Template>;
	brand?: Brand;
}

/** The reward-earned email (docs/messages.md): to the user whose ledger granted the reward. */
export function rewardEmail(input: RewardEmailInput): EmailPayload {
	const lang = input.lang ?? "en";
	const toName = headerText(input.toName) || null;
	const { template } = pickTemplate(input.templates ?? new Map(), DEFAULT_TEMPLATES.reward, lang);
	const values = {
		...offerOf(input.campaign),
		name: toName,
		reward: input.reward,
		friendname: headerText(input.friendName) || null,
		eventname: input.eventname,
		sharelink: input.shareurl,
		referralcode: input.referralcode,
		appname: input.brand?.name ?? "",
	};
	return { to: input.to, toName, ...renderMessage(template, values, input.brand ?? null, lang) };
}

/**
 * A granted reward as its owner reads it (`{{reward}}`): a coupon reward's
 * code, else the amount (hundredths) with its unit, e.g. `12.5 EUR`.
 */
export function rewardEarnedText(reward: { amount: number; rewardunit: string; rewardtype: string; coupon: string | null }): string {
	if (reward.rewardtype === "Coupon" && reward.coupon) return reward.coupon;
	return `${formatAmount(reward.amount)} ${reward.rewardunit}`;
}

/** What the recipient's side earns by the campaign's first rule for that side ("" when none), for `{{reward}}`. */
export function sideReward(
	rules: readonly Pick<RewardRule, "rewardusertype" | "reward" | "rewardunit">[],
	side: "Referrer" | "Friend",
): string {
	return rewardText(rules.find((rule) => rule.rewardusertype === side));
}

/**
 * A template as the editor previews it: the campaign's offer and reward, the
 * app's brand, and a sample recipient (SAMPLE_VALUES) for the rest.
 */
export function previewMessage(
	kind: MessageKind,
	template: Template,
	campaign: Pick<CampaignWithDetails, "offertitle" | "offerdescription" | "campaignname" | "rewardrules">,
	brand: Brand,
	lang: Lang,
	/** The sample's share link as the real email would carry it now ("" drops its line, as the real email does). */
	sharelink?: string,
): { subject: string; text: string; html: string } {
	const reward = sideReward(campaign.rewardrules, kind === "reminder" ? "Friend" : "Referrer");
	const link =
		sharelink === undefined ? {} : { sharelink, ...(kind === "outreach" ? { sharemessage: `Join me: ${sharelink} (code ANN123)` } : {}) };
	const values = { ...SAMPLE_VALUES[kind], ...offerOf(campaign), appname: brand.name, ...(reward ? { reward } : {}), ...link };
	return renderMessage(template, values, brand, lang);
}

export interface InvitationEmailInput {
	to: string;
	appname: string;
	role: string;
	url: string;
	/** Epoch ms. */
	expiresAt: number;
	/** The app's logo and accent colour, as on every email of the app. */
	brand?: Brand;
}

/**
 * The invitation to an app's team: the only place its link is ever given
 * (docs/operators.md). Holding this email is the proof of the address.
 */
export function invitationEmail(input: InvitationEmailInput): EmailPayload {
	const app = headerText(input.appname) || "an app";
	const subject = headerText(`You are invited to ${app}'s referral dashboard`);
	const until = new Date(input.expiresAt).toISOString().replace("T", " ").slice(0, 16);
	const text = [
		"Hi,",
		"",
		`You were invited to the referral dashboard of ${app} as ${input.role}.`,
		`Open this link to accept (it works once, until ${until} UTC):`,
		input.url,
		"",
		"If you did not expect this, ignore this email: nothing happens until the link is opened.",
	].join("\n");
	const body = html`<p>Hi,</p><p>You were invited to the referral dashboard of <strong>${app}</strong> as ${input.role}.</p>
<p><a href="${raw(safeHref(input.url))}">Accept the invitation</a> (it works once, until ${until} UTC).</p>
<p>If you did not expect this, ignore this email: nothing happens until the link is opened.</p>`;
	return { to: input.to, toName: null, subject, text, html: brandedLayout(subject, body, input.brand ?? null) };
}

/** A password reset: the only place its link is given. */
export function passwordResetEmail(input: { to: string; url: string }): EmailPayload {
	const subject = "Reset your referral dashboard password";
	const text = [
		"Hi,",
		"",
		"Someone asked to reset the password of the referral dashboard for this address.",
		"Open this link within 1 hour to choose a new one (it works once; every signed-in session ends):",
		input.url,
		"",
		"If it was not you, ignore this email: your password stays as it is.",
	].join("\n");
	const body = html`<p>Hi,</p><p>Someone asked to reset the password of the referral dashboard for this address.</p>
<p><a href="${raw(safeHref(input.url))}">Choose a new password</a> within 1 hour (it works once; every signed-in session ends).</p>
<p>If it was not you, ignore this email: your password stays as it is.</p>`;
	// A person's password is not any one app's: the service's own look, no app's brand.
	return { to: input.to, toName: null, subject, text, html: brandedLayout(subject, body, null) };
}
