import type { Campaign, SocialAction } from "../db/campaigns";
import type { EmailPayload } from "../domain/outbox-event";
import { html, raw, safeHref } from "./html";
import { headerText } from "./mail-headers";

/** The Mail social action of a campaign (socialactionid 5, or named Mail), if any. */
export function mailAction(actions: SocialAction[]): SocialAction | undefined {
	return actions.find((a) => a.socialactionid === "5") ?? actions.find((a) => a.socialactionname.toLowerCase() === "mail");
}

/** A share message with the spec's tokens replaced by the user's link and code. */
export function fillShareTokens(message: string, shareurl: string, code: string): string {
	return message.replaceAll("SHARE_URL", shareurl).replaceAll("SHARE_CODE", code);
}

/** Plain text with URLs turned into links, every other character escaped. */
function linkify(text: string): string {
	return text
		.split(/(https?:\/\/[^\s<>"']+)/g)
		.map((part, i) => (i % 2 === 1 ? html`<a href="${raw(safeHref(part))}">${part}</a>` : html`${part}`))
		.join("")
		.replace(/\n/g, "<br>");
}

const layout = (title: string, body: string) =>
	html`<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body style="font-family:sans-serif;max-width:560px;margin:auto">${raw(body)}</body></html>`;

export interface OutreachEmailInput {
	to: string;
	toName: string | null;
	campaign: Pick<Campaign, "offertitle" | "offerdescription" | "campaignname">;
	mailMessage: string | null;
	shareurl: string;
	referralcode: string;
}

/** The outreach email: the campaign's offer, the user's share link and code, and the Mail message. */
export function outreachEmail(input: OutreachEmailInput): EmailPayload {
	const title = input.campaign.offertitle || input.campaign.campaignname;
	const toName = headerText(input.toName) || null;
	const message = input.mailMessage ? fillShareTokens(input.mailMessage, input.shareurl, input.referralcode) : "";
	const greeting = toName ? `Hi ${toName},` : "Hi,";
	const text = [
		greeting,
		"",
		title,
		input.campaign.offerdescription,
		"",
		`Share your link: ${input.shareurl}`,
		`Your referral code: ${input.referralcode}`,
		...(message ? ["", "Message to share:", message] : []),
	].join("\n");
	const body = html`<p>${greeting}</p><h2>${title}</h2><p>${input.campaign.offerdescription}</p>
<p>Share your link: <a href="${raw(safeHref(input.shareurl))}">${input.shareurl}</a><br>Your referral code: <strong>${input.referralcode}</strong></p>
${raw(message ? html`<p>Message to share:</p><blockquote>${raw(linkify(message))}</blockquote>` : "")}`;
	return { to: input.to, toName, subject: headerText(title), text, html: layout(title, body) };
}

export interface ReminderEmailInput {
	to: string;
	toName: string | null;
	referrerName: string | null;
	campaign: Pick<Campaign, "offertitle" | "offerdescription" | "campaignname">;
	message: string | null;
	landingurl: string | null;
}

/** The reminder a referrer sends a friend who has not converted yet. */
export function reminderEmail(input: ReminderEmailInput): EmailPayload {
	// Names are one line everywhere: the referrer's name is part of the subject (a header).
	const who = headerText(input.referrerName) || "Your friend";
	const toName = headerText(input.toName) || null;
	const subject = headerText(`${who} reminds you: ${input.campaign.offertitle || input.campaign.campaignname}`);
	const greeting = toName ? `Hi ${toName},` : "Hi,";
	const text = [
		greeting,
		"",
		`${who} invited you and wanted to remind you of the offer:`,
		input.campaign.offertitle || input.campaign.campaignname,
		input.campaign.offerdescription,
		...(input.message ? ["", `${who} says: ${input.message}`] : []),
		...(input.landingurl ? ["", input.landingurl] : []),
	].join("\n");
	const body = html`<p>${greeting}</p><p>${who} invited you and wanted to remind you of the offer:</p>
<h2>${input.campaign.offertitle || input.campaign.campaignname}</h2><p>${input.campaign.offerdescription}</p>
${raw(input.message ? html`<blockquote>${who} says: ${input.message}</blockquote>` : "")}
${raw(input.landingurl ? html`<p><a href="${raw(safeHref(input.landingurl))}">${input.landingurl}</a></p>` : "")}`;
	return { to: input.to, toName, subject, text, html: layout(subject, body) };
}

export interface InvitationEmailInput {
	to: string;
	appname: string;
	role: string;
	url: string;
	/** Epoch ms. */
	expiresAt: number;
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
	return { to: input.to, toName: null, subject, text, html: layout(subject, body) };
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
	return { to: input.to, toName: null, subject, text, html: layout(subject, body) };
}
