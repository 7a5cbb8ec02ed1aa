/** @jsxImportSource hono/jsx */
import { type Context, Hono } from "hono";
import { findApp } from "../db/apps";
import { getCampaignWithDetails } from "../db/campaigns";
import { readAppStanding } from "../db/leaderboard-shards";
import { findUser } from "../db/users";
import { exactOrigin } from "../domain/frame-origin";
import { bucketOf } from "../domain/leaderboard";
import { isShownLogo } from "../domain/logo";
import { publicOrigin } from "../domain/public-origin";
import { shareUrl } from "../domain/share-url";
import { FILL_PAGES_PER_READ } from "../ledger/friends-fill";
import { ledgerFor } from "../ledger/stub";
import { negotiateLang } from "./i18n";
import { ForbiddenPage, GonePage, SharePage, type SharePageData } from "./page";
import { verifySharePage } from "./signature";
import { fontStack, safeColor, textColorOn } from "./style";
import { shareTargets } from "./targets";
import { WIDGET_JS } from "./widget";

/** The share page names ranks up to this one; below it, the user is told it is not in this month's top SHARE_RANK_TOP yet. */
const SHARE_RANK_TOP = 1000;

/** The hosted referral page (`/share/<appid>/<userkey>?exp&sig`) and the script that frames it (`/widget.js`). */
export const sharePageRoutes = new Hono<{ Bindings: Env }>();

function newNonce(): string {
	return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
}

/**
 * Who may frame the page: the app's configured origin, else its landing URL's
 * origin, else nobody; always one exact origin (a value stored before that
 * rule that is a pattern frames nothing).
 */
export function frameOrigin(app: { frameorigin: string | null; landingurl: string | null }): string | null {
	if (app.frameorigin) return exactOrigin(app.frameorigin);
	return app.landingurl ? exactOrigin(app.landingurl) : null;
}

/** The app's logo as the page shows it: an https URL (the admin API allows no other) or one uploaded here (domain/logo.ts), else none. */
function logoOf(app: { logourl: string | null }, env: Env): { url: string; origin: string } | null {
	try {
		if (!isShownLogo(app.logourl, publicOrigin(env))) return null;
		const url = new URL(app.logourl);
		return { url: url.href, origin: url.origin };
	} catch {
		return null;
	}
}

function secureHeaders(c: Context, nonce: string, ancestor: string | null, imageOrigin: string | null = null) {
	// No request leaves the page but the app's logo: everything is inline (nonce'd), one image origin at most.
	c.header(
		"Content-Security-Policy",
		`default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src ${imageOrigin ?? "'none'"}; base-uri 'none'; form-action 'none'; frame-ancestors ${ancestor ?? "'none'"}`,
	);
	// X-Frame-Options cannot name another origin; frame-ancestors governs when one is allowed.
	if (!ancestor) c.header("X-Frame-Options", "DENY");
	c.header("Referrer-Policy", "no-referrer");
	c.header("X-Content-Type-Options", "nosniff");
	c.header("Cache-Control", "no-store");
}

function forbidden(c: Context) {
	const nonce = newNonce();
	secureHeaders(c, nonce, null);
	return c.html(<ForbiddenPage nonce={nonce} />, 403);
}

sharePageRoutes.get("/share/:appid/:userkey", async (c) => {
	const { appid, userkey } = c.req.param();
	const app = await findApp(c.env.DB, appid);
	const now = Math.floor(Date.now() / 1000);
	if (!app || !(await verifySharePage(app.privatekeyHash, appid, userkey, c.req.query("exp"), c.req.query("sig"), now))) {
		return forbidden(c);
	}
	const user = await findUser(c.env.DB, appid, { userkey });
	if (!user) return forbidden(c);
	// Erasure is final: a link signed before it shows nothing (docs/fraud.md).
	if (user.erasedAt !== null) {
		const nonce = newNonce();
		secureHeaders(c, nonce, null);
		return c.html(<GonePage nonce={nonce} />, 410);
	}
	const ledger = ledgerFor(c.env, appid, user.userkey);
	const [campaign, balance, kept] = await Promise.all([
		getCampaignWithDetails(c.env.DB, app.campaignAppid, user.campaignid),
		ledger.balance({}),
		// The friends' counts from the ledger (issue 49 piece 4); an empty page costs no scan (ledger/friends.ts).
		ledger.friendsPage({ limit: 0, offset: 0, rewardsLimit: 0, shownToUser: false }),
	]);
	// Not all there yet: D1's counts (read with the user), and the ledger copies its friends after the answer. Fewer than
	// D1 counts: a friend missed (a failed ledger call), copied again after the answer (ledger/friends-fill.ts, the repair).
	if (!kept || kept.total < user.friendsCount) {
		const filling = ledger.fillFriends(appid, user.userkey, { userid: user.userid, friends: user.friendsCount }, FILL_PAGES_PER_READ);
		c.executionCtx.waitUntil(filling.catch((error: unknown) => console.error("share page: the friends' fill failed", error)));
	}
	// The rank among this month's referrers (app's time zone), from the maintained counters: read only when shown.
	const standing = campaign?.showleaderboard
		? await readAppStanding(c.env, app.layout, {
				appid,
				campaignid: user.campaignid,
				bucket: bucketOf("month", app.timezone, Date.now()).key,
				userkey: user.userkey,
				// A rank past SHARE_RANK_TOP reads as SHARE_RANK_TOP + 1 (the page names none lower); a few seeks either way.
				ahead: SHARE_RANK_TOP,
			})
		: undefined;
	const shareurl = shareUrl(user.referralcode, user.customdomain, c.env.SHARE_BASE_URL, publicOrigin(c.env) ?? new URL(c.req.url).origin);
	const background = safeColor(campaign?.campaignbgcolor);
	const logo = logoOf(app, c.env);
	const offertitle = campaign?.offertitle ?? "";
	const data: SharePageData = {
		offertitle,
		offerdescription: campaign?.offerdescription ?? "",
		background,
		foreground: textColorOn(background),
		font: fontStack(campaign?.widgetfont),
		shareurl,
		referralcode: user.referralcode,
		targets: shareTargets(campaign?.socialactions ?? [], shareurl, user.referralcode, offertitle || "Join me"),
		friends: kept?.total ?? user.friendsCount,
		converted: kept?.converted ?? user.convertedFriendsCount,
		rewards: balance.map((b) => ({ unit: b.rewardunit, earned: b.total, pending: b.pending, available: b.approved })),
		terms: campaign?.terms ?? "",
		lang: negotiateLang(c.req.header("accept-language")),
		brand: { name: app.name, logourl: logo?.url ?? null, accent: app.accentcolor ? safeColor(app.accentcolor) : null },
		...(standing === undefined ? {} : { rank: standing?.rank ?? null, rankTop: SHARE_RANK_TOP }),
	};
	const nonce = newNonce();
	secureHeaders(c, nonce, frameOrigin(app), logo?.origin ?? null);
	// The labels follow the browser's language: a cache must keep one copy per language.
	c.header("Vary", "Accept-Language");
	return c.html(<SharePage data={data} nonce={nonce} />);
});

sharePageRoutes.get("/widget.js", (c) => {
	c.header("Content-Type", "text/javascript; charset=utf-8");
	c.header("Cache-Control", "public, max-age=300");
	c.header("Cross-Origin-Resource-Policy", "cross-origin");
	c.header("X-Content-Type-Options", "nosniff");
	return c.body(WIDGET_JS);
});
