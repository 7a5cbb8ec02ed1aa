import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bucketOf } from "../../src/domain/leaderboard";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, type createApp, request } from "../support/api";
import { createOneDatabaseApp } from "../support/layout";

/**
 * Issue 34: the user's rank among this month's referrers on the share page,
 * when the campaign turns it on (`showleaderboard`), read from the
 * leaderboard's maintained counters.
 */

type App = Awaited<ReturnType<typeof createApp>>;

const register = async (app: App, body: Record<string, unknown>) =>
	(await app.api<{ userkey: string; referralcode: string }>("register", { email: `${crypto.randomUUID()}@x.com`, ...body })).body;

let customid = 1;
/** `n` friends of `referrer` each make a purchase; the referrer's ledger is flushed so its counters move. */
async function referFriends(app: App, referrer: { userkey: string; referralcode: string }, n: number) {
	for (let i = 0; i < n; i++) {
		const friend = await register(app, { referrercode: referrer.referralcode });
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid: `rank-${customid++}`,
			growthhack: "SaaS_Referrals",
		});
		expect(res.status).toBe(200);
	}
	await ledgerFor(env, app.appid, referrer.userkey).flush();
}

async function sharePage(app: App, userkey: string, lang = "en"): Promise<string> {
	const link = await app.api<{ url: string }>("getsharepage", { userkey });
	const url = new URL(link.body.url);
	const res = await request(`${url.pathname}${url.search}`, { headers: { "accept-language": lang } });
	expect(res.status).toBe(200);
	return res.text();
}
const rankLine = (html: string) => /<p id="leaderboard-rank">([^<]*)<\/p>/.exec(html)?.[1]?.replaceAll("&#39;", "'") ?? null;

describe("the share page's rank", () => {
	it("shows the user's place among this month's referrers when the campaign turns it on, and nothing otherwise", async () => {
		const app = await createOneDatabaseApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const [ann, bob, cid, new1] = [await register(app, {}), await register(app, {}), await register(app, {}), await register(app, {})];
		await referFriends(app, ann, 3);
		await referFriends(app, bob, 1);
		await referFriends(app, cid, 2);
		// Off by default: no rank, and getcampaigndata says so.
		expect(rankLine(await sharePage(app, bob.userkey))).toBeNull();
		expect((await app.api("getcampaigndata", { campaignid: app.campaignid })).body.showleaderboard).toBe(false);

		const on = await admin("PATCH", `/apps/${app.appid}/campaigns/${app.campaignid}`, { showleaderboard: true });
		expect(on.status).toBe(200);
		expect((await app.api("getcampaigndata", { campaignid: app.campaignid })).body.showleaderboard).toBe(true);
		expect(rankLine(await sharePage(app, ann.userkey))).toBe("You are #1 of this month's referrers");
		expect(rankLine(await sharePage(app, cid.userkey))).toBe("You are #2 of this month's referrers");
		expect(rankLine(await sharePage(app, bob.userkey))).toBe("You are #3 of this month's referrers");
		expect(rankLine(await sharePage(app, bob.userkey, "fr"))).toBe("Vous êtes n° 3 des parrains ce mois-ci");
		// A referrer with no converted friend this month is not ranked yet.
		expect(rankLine(await sharePage(app, new1.userkey))).toBe("Not on this month's leaderboard yet: a friend who converts puts you on it.");
		// Bob overtakes Cid: the counters move with the rewards.
		await referFriends(app, bob, 2);
		expect(rankLine(await sharePage(app, bob.userkey))).toBe("You are #2 of this month's referrers");
		expect(rankLine(await sharePage(app, cid.userkey))).toBe("You are #3 of this month's referrers");
	});

	it("names ranks up to 1000 and, beyond, says the user is not in the top 1000 yet (the read stays bounded)", async () => {
		const app = await createOneDatabaseApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			showleaderboard: true,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const me = await register(app, {});
		await referFriends(app, me, 1);
		expect(rankLine(await sharePage(app, me.userkey))).toBe("You are #1 of this month's referrers");
		// 1000 referrers ahead, each with 2 friends this month (users and their counters as the flush keeps them).
		// This month in the app's time zone, as the page reads it (a UTC month would miss it near a month's end).
		const zoneRow = await env.DB.prepare("SELECT timezone FROM apps WHERE appid = ?").bind(app.appid).first<{ timezone: string | null }>();
		const bucket = bucketOf("month", zoneRow?.timezone ?? "UTC", Date.now()).key;
		const run = crypto.randomUUID().slice(0, 8);
		await env.DB.prepare(
			`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000)
			 INSERT INTO users (appid, userkey, referralcode, campaignid, created_at, updated_at)
			 SELECT ?1, ?2 || i, upper(?2) || i, ?3, '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z' FROM s`,
		)
			.bind(app.appid, `ahead${run}-`, app.campaignid)
			.run();
		await env.DB.prepare(
			`INSERT INTO leaderboard_counts (appid, campaignid, bucket, userkey, friends, earned, reached_at)
			 SELECT appid, campaignid, ?2, userkey, 2, 10, '2026-11-01T00:00:00Z' FROM users WHERE appid = ?1 AND userkey LIKE ?3`,
		)
			.bind(app.appid, bucket, `ahead${run}-%`)
			.run();
		expect(rankLine(await sharePage(app, me.userkey))).toBe("Not in this month's top 1000 referrers yet: keep sharing.");
		// getleaderboard still counts every row ahead.
		const board = await app.api<{ user: { rank: number } }>("getleaderboard", { period: "month", userkey: me.userkey });
		expect(board.body.user.rank).toBe(1001);
	});
});
