import type { SocialAction } from "../db/campaigns";

/** One share button of the referral page. */
export interface ShareTarget {
	kind: "facebook" | "x" | "mail" | "link";
	label: string;
	href: string;
	message: string;
}

/** `SHARE_URL` and `SHARE_CODE` in a share message stand for the user's link and code. */
export function fillShareMessage(template: string, shareurl: string, code: string): string {
	return template.replaceAll("SHARE_URL", shareurl).replaceAll("SHARE_CODE", code);
}

/** The channel of a social action: by its id (spec: 1 Facebook, 2 Twitter, 5 Mail, 14 CustomLink), else by its name. */
export function shareKind(action: Pick<SocialAction, "socialactionid" | "socialactionname">): ShareTarget["kind"] {
	const byId: Record<string, ShareTarget["kind"]> = { "1": "facebook", "2": "x", "5": "mail", "14": "link" };
	const known = byId[action.socialactionid.trim()];
	if (known) return known;
	const name = action.socialactionname.toLowerCase();
	if (name.includes("facebook")) return "facebook";
	if (name.includes("twitter") || name === "x") return "x";
	if (name.includes("mail")) return "mail";
	return "link";
}

const withLink = (message: string, shareurl: string) => (message.includes(shareurl) ? message : `${message} ${shareurl}`.trim());

/** The share buttons in `displayorder` (ties keep the campaign's order), each with its real target. */
export function shareTargets(actions: SocialAction[], shareurl: string, code: string, subject: string): ShareTarget[] {
	return [...actions]
		.sort((a, b) => a.displayorder - b.displayorder)
		.map((action) => {
			const kind = shareKind(action);
			const message = fillShareMessage(action.sharemessage, shareurl, code);
			const q = (params: Record<string, string>) => new URLSearchParams(params).toString().replace(/\+/g, "%20");
			const href = {
				facebook: `https://www.facebook.com/sharer/sharer.php?${q({ u: shareurl, ...(message ? { quote: message } : {}) })}`,
				x: `https://x.com/intent/tweet?${q({ text: withLink(message, shareurl) })}`,
				mail: `mailto:?${q({ subject: fillShareMessage(action.sharetitle, shareurl, code) || subject, body: withLink(message, shareurl) })}`,
				link: shareurl,
			}[kind];
			return { kind, label: action.socialactionname, href, message };
		});
}
