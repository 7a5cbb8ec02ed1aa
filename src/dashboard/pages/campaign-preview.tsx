/** @jsxImportSource hono/jsx */
import type { SocialAction } from "../../db/campaigns";
import { SharePage, type SharePageData } from "../../sharepage/page";
import { fontStack, safeColor, textColorOn } from "../../sharepage/style";
import { shareTargets } from "../../sharepage/targets";
import { liveRules, liveShares, NETWORKS, shareIdentity, type TypedCampaign } from "../campaign-typed";
import type { AppInfo } from "../context";
import { ruleSentence } from "../rule-words";

/**
 * The campaign builder's preview (issue 48): the campaign in words, and the
 * share page and the widget (the same page framed in the product's own page,
 * narrower) as a sample user would see them with what the form holds now.
 * Rendered by the share page's own component, in sandboxed frames (no
 * script runs in them), so it is the page itself, not a look-alike.
 */

const SAMPLE_CODE = "ANN123";

/** The share page a sample user would get from the typed campaign. */
export async function previewHtml(typed: TypedCampaign, app: Pick<AppInfo, "name" | "logourl" | "accentcolor">, origin: string) {
	const t = typed.text;
	const shareurl = `${origin}/r/${SAMPLE_CODE}`;
	const actions: SocialAction[] = liveShares(typed).map((share, i) => ({
		campaignsocialactionid: i,
		...shareIdentity(share),
		sharemessage: share.sharemessage,
		sharetitle: share.sharetitle,
		shareimageurl: share.shareimageurl,
		displayorder: /^\d+$/.test(share.displayorder) ? Number(share.displayorder) : 0,
		sharemessagetype: Number(shareIdentity(share).sharemessagetype) || 0,
	}));
	const background = safeColor(t.campaignbgcolor);
	const data: SharePageData = {
		offertitle: t.offertitle,
		offerdescription: t.offerdescription,
		background,
		foreground: textColorOn(background),
		font: fontStack(t.widgetfont),
		shareurl,
		referralcode: SAMPLE_CODE,
		targets: shareTargets(actions, shareurl, SAMPLE_CODE, t.offertitle || "Join me"),
		friends: 3,
		converted: 1,
		rewards: [],
		terms: t.terms,
		lang: "en",
		brand: { name: app.name, logourl: app.logourl, accent: app.accentcolor ? safeColor(app.accentcolor) : null },
		...(typed.showleaderboard ? { rank: 4, rankTop: 10 } : {}),
	};
	return String(await (<SharePage data={data} nonce="preview" />).toString());
}

export function CampaignPreview({ typed, html }: { typed: TypedCampaign; html: string }) {
	const sentences = liveRules(typed)
		.map(ruleSentence)
		.filter((s): s is string => s !== null);
	const shares = liveShares(typed).map((s) => NETWORKS.find((n) => n.value === s.network)?.label ?? (s.socialactionname || "Other"));
	return (
		<section id="preview" class="preview" aria-labelledby="preview-title" aria-live="polite" tabindex={0}>
			<h2 id="preview-title">Preview</h2>
			<h3>In words</h3>
			<ul id="preview-rules">
				{sentences.length > 0 ? sentences.map((s) => <li>{s}</li>) : <li>No reward yet: nobody earns anything from this campaign.</li>}
			</ul>
			<p id="preview-sharing">
				{shares.length > 0 ? `Share buttons: ${shares.join(", ")}.` : "No share button: the page shows the link and code only."}
			</p>
			<h3>Share page</h3>
			<p class="muted">As a sample user (code {SAMPLE_CODE}, 3 friends joined) sees it.</p>
			<iframe id="preview-share" title="Share page preview" sandbox="" srcdoc={html} class="preview-page" />
			<h3>Widget</h3>
			<p class="muted">The same page framed by widget.js in your product, here 340 px wide.</p>
			<iframe id="preview-widget" title="Widget preview" sandbox="" srcdoc={html} class="preview-widget" />
		</section>
	);
}
