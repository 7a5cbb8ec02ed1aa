/** @jsxImportSource hono/jsx */
import { raw } from "hono/html";
import { type Lang, textFor } from "./i18n";
import { textColorOn } from "./style";
import type { ShareTarget } from "./targets";

/** What the hosted referral page shows. */
export interface SharePageData {
	offertitle: string;
	offerdescription: string;
	background: string;
	foreground: string;
	font: string;
	shareurl: string;
	referralcode: string;
	targets: ShareTarget[];
	friends: number;
	converted: number;
	/** Per reward unit: earned in all (any status but Rejected), pending (under review or on hold) and available to redeem now. */
	rewards: { unit: string; earned: number; pending: number; available: number }[];
	/** The campaign's terms as written (shown collapsed); empty: none. */
	terms: string;
	/** The language of the page's own labels (Accept-Language). */
	lang: Lang;
	/** The app's brand (docs/messages.md): its logo (https, allowed by the page's CSP) and accent colour (#rrggbb, safeColor'd). */
	brand?: { name: string; logourl: string | null; accent: string | null };
	/** The user's rank among this month's referrers when the campaign shows it (null: not ranked yet); absent: not shown. */
	rank?: number | null;
	/** The largest rank named; a rank beyond it reads as "not in the top N yet". */
	rankTop?: number;
}

/** The rank line: named up to `top`, "not in the top N yet" beyond it, "not on the board yet" without a rank. */
function rankText(t: ReturnType<typeof textFor>, rank: number | null, top = Number.POSITIVE_INFINITY): string {
	if (rank === null) return t.unranked;
	return rank > top ? t.beyond(top) : t.rank(rank);
}

const amount = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));

function css(data: Pick<SharePageData, "background" | "foreground" | "font" | "brand">): string {
	// Values come from safeColor/fontStack, which admit no quote, brace or angle bracket that could end the rule.
	const accent = data.brand?.accent;
	// The app's accent on the buttons in both colour schemes, its text black or white, whichever reads better.
	const branded = accent ? `\nbutton,.share a{background:${accent};color:${textColorOn(accent)}}` : "";
	return `:root{--bg:${data.background};--fg:${data.foreground};--font:${data.font}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font-family:var(--font);line-height:1.45}
main{max-width:40rem;margin:0 auto;padding:1.25rem}
h1{font-size:1.6rem;margin:0 0 .5rem}
p{margin:0 0 1rem}
.card{background:#fff;color:#111;border:1px solid rgba(0,0,0,.18);box-shadow:0 1px 3px rgba(0,0,0,.12);border-radius:.75rem;padding:1rem;margin:0 0 1rem}
details.card summary{cursor:pointer;font-weight:600}
.terms{white-space:pre-line;margin:.75rem 0 0}
label{display:block;font-weight:600;margin-bottom:.35rem}
.row{display:flex;gap:.5rem;flex-wrap:wrap}
.row input{flex:1 1 14rem;min-width:0;font:inherit;padding:.6rem;border:1px solid #888;border-radius:.4rem;background:#fff;color:#111}
button,.share a{font:inherit;font-weight:600;padding:.6rem 1rem;border-radius:.4rem;border:0;cursor:pointer;text-decoration:none;display:inline-block}
button{background:#111;color:#fff}
.code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:1.3rem;letter-spacing:.1em}
.share{list-style:none;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:.5rem}
.share a{background:#111;color:#fff}
.share a:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid #1a73e8;outline-offset:2px}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(8rem,1fr));gap:.75rem;margin:0}
.stats div{background:#f3f3f3;border-radius:.5rem;padding:.6rem}
.stats dt{font-size:.85rem}
.stats dd{margin:0;font-size:1.4rem;font-weight:700}
[hidden]{display:none!important}
@media (prefers-color-scheme:dark){.card{background:#1c1c1e;color:#f2f2f2;border-color:rgba(255,255,255,.22)}
.stats div{background:#2c2c2e}.row input{background:#111;color:#f2f2f2;border-color:#777}
button,.share a{background:#f2f2f2;color:#111}}
.logo{display:block;max-height:3rem;max-width:12rem;margin:0 0 .75rem}${branded}`;
}

// The copy button needs script; the page itself does not. It also tells a framing widget.js its height.
const SCRIPT = `(function(){
var b=document.getElementById("copy"),i=document.getElementById("shareurl"),s=document.getElementById("copy-status");
if(b&&i&&navigator.clipboard){b.hidden=false;b.addEventListener("click",function(){navigator.clipboard.writeText(i.value).then(function(){s.textContent=b.dataset.copied;},function(){i.select();s.textContent=b.dataset.hint;});});}
if(window.parent!==window){var last=0,send=function(){var h=Math.ceil(document.documentElement.getBoundingClientRect().height);if(h!==last){last=h;window.parent.postMessage({type:"referral-page:height",height:h},"*");}};
new ResizeObserver(send).observe(document.documentElement);send();}
})();`;

function Document(props: { title: string; nonce: string; styles: string; children: unknown; script?: boolean; lang?: Lang }) {
	return (
		<>
			{raw("<!doctype html>")}
			<html lang={props.lang ?? "en"}>
				<head>
					<meta charset="utf-8" />
					<meta name="viewport" content="width=device-width, initial-scale=1" />
					<meta name="referrer" content="no-referrer" />
					<title>{props.title}</title>
					<style nonce={props.nonce}>{raw(props.styles)}</style>
				</head>
				<body>
					{props.children}
					{props.script ? <script nonce={props.nonce}>{raw(SCRIPT)}</script> : null}
				</body>
			</html>
		</>
	);
}

/** The referral page of one user, its labels in `data.lang`. */
export function SharePage({ data, nonce }: { data: SharePageData; nonce: string }) {
	const t = textFor(data.lang);
	return (
		<Document title={data.offertitle || t.title} nonce={nonce} styles={css(data)} lang={data.lang} script>
			<main>
				{data.brand?.logourl ? <img class="logo" id="app-logo" src={data.brand.logourl} alt={data.brand.name} /> : null}
				<h1 id="offer-title">{data.offertitle || t.title}</h1>
				{data.offerdescription ? <p id="offer-description">{data.offerdescription}</p> : null}
				<section class="card" aria-labelledby="link-heading">
					<label id="link-heading" for="shareurl">
						{t.link}
					</label>
					<div class="row">
						<input id="shareurl" type="text" readonly value={data.shareurl} />
						<button id="copy" type="button" data-copied={t.copied} data-hint={t.copyHint} hidden>
							{t.copy}
						</button>
					</div>
					<p id="copy-status" role="status" aria-live="polite" />
					<p>
						{t.code}{" "}
						<strong class="code" id="referralcode">
							{data.referralcode}
						</strong>
					</p>
				</section>
				{data.targets.length > 0 ? (
					<section class="card" aria-labelledby="share-heading">
						<h2 id="share-heading">{t.share}</h2>
						<ul class="share" id="share-buttons">
							{data.targets.map((target) => (
								<li>
									<a href={target.href} data-kind={target.kind} target="_blank" rel="noopener noreferrer">
										{t.channels[target.kind]}
									</a>
								</li>
							))}
						</ul>
					</section>
				) : null}
				<section class="card" aria-labelledby="progress-heading">
					<h2 id="progress-heading">{t.progress}</h2>
					<dl class="stats">
						<div>
							<dt>{t.joined}</dt>
							<dd id="friends-joined">{data.friends}</dd>
						</div>
						<div>
							<dt>{t.converted}</dt>
							<dd id="friends-converted">{data.converted}</dd>
						</div>
						{data.rewards.map((r) => (
							<>
								<div>
									<dt>{t.earned(r.unit)}</dt>
									<dd data-earned={r.unit}>{amount(r.earned)}</dd>
								</div>
								<div>
									<dt>{t.pending(r.unit)}</dt>
									<dd data-pending={r.unit}>{amount(r.pending)}</dd>
								</div>
								<div>
									<dt>{t.available(r.unit)}</dt>
									<dd data-available={r.unit}>{amount(r.available)}</dd>
								</div>
							</>
						))}
					</dl>
					{data.rewards.length === 0 ? <p id="no-rewards">{t.noRewards}</p> : null}
					{data.rank === undefined ? null : <p id="leaderboard-rank">{rankText(t, data.rank, data.rankTop)}</p>}
				</section>
				{data.terms ? (
					<details class="card" id="terms">
						<summary>{t.terms}</summary>
						<p class="terms">{data.terms}</p>
					</details>
				) : null}
			</main>
		</Document>
	);
}

/** A page that says one thing and nothing about whom: for a link that is not valid, or a user who was erased. */
function NoticePage({ nonce, title, heading, text }: { nonce: string; title: string; heading: string; text: string }) {
	return (
		<Document title={title} nonce={nonce} styles={css({ background: "#ffffff", foreground: "#111111", font: "system-ui, sans-serif" })}>
			<main>
				<h1>{heading}</h1>
				<p>{text}</p>
			</main>
		</Document>
	);
}

/** The page of an erased user: gone for good (410), saying nothing about whom it was. */
export const GonePage = ({ nonce }: { nonce: string }) => (
	<NoticePage
		nonce={nonce}
		title="Page no longer available"
		heading="This page is no longer available"
		text="The referral page it showed has been removed."
	/>
);

/** The same page for a forged, altered, expired or unknown link: says nothing about which. */
export const ForbiddenPage = ({ nonce }: { nonce: string }) => (
	<NoticePage
		nonce={nonce}
		title="Link not valid"
		heading="This link is not valid"
		text="It may have expired. Go back to the app and open your referral page again."
	/>
);
