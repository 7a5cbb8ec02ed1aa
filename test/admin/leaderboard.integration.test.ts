import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, request } from "../support/api";

describe("GET /admin/v1/apps/{appid}/leaderboard", () => {
	it("shows the board with emails to a viewer, refuses bad queries, and hides erased referrers", async () => {
		const app = await createApp({
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		});
		const ann = (await app.api("register", { email: "ann@x.com", name: "Ann Lee" })).body;
		const bob = (await app.api("register", { email: "bob@x.com", name: "Bob Stone" })).body;
		let n = 0;
		for (const [ref, count] of [
			[ann, 2],
			[bob, 1],
		] as const) {
			for (let i = 0; i < count; i++) {
				const friend = (await app.api("register", { email: `f${n}@x.com`, referrercode: ref.referralcode })).body;
				const body = { userkey: friend.userkey, eventname: "Purchase", customid: `adm-${n++}`, growthhack: "SaaS_Referrals" };
				expect((await app.api("registerconversionevent", body)).status).toBe(200);
			}
			await ledgerFor(env, app.appid, ref.userkey).flush();
		}
		const token = (await admin("POST", `/apps/${app.appid}/tokens`, { name: "viewer-bot", role: "viewer" })).body.token as string;
		const asViewer = async (query: string) => {
			const res = await request(`/admin/v1/apps/${app.appid}/leaderboard${query}`, { headers: { authorization: `Bearer ${token}` } });
			return { status: res.status, body: (await res.json()) as Record<string, any> };
		};
		const board = await asViewer("?period=month");
		expect(board.status).toBe(200);
		expect(board.body).toMatchObject({ campaignid: app.campaignid, period: "month", timezone: "UTC" });
		expect(board.body.leaderboard).toEqual([
			{ rank: 1, userkey: ann.userkey, displayname: "Ann L.", friendsconverted: 2, earned: 10, email: "ann@x.com" },
			{ rank: 2, userkey: bob.userkey, displayname: "Bob S.", friendsconverted: 1, earned: 5, email: "bob@x.com" },
		]);
		expect((await asViewer("?limit=1")).body.leaderboard).toHaveLength(1);
		for (const query of ["?period=year", "?limit=0", "?limit=101", "?campaignid=x"]) expect((await asViewer(query)).status).toBe(400);
		expect((await asViewer("?campaignid=999999999")).body.errorcode).toBe("campaign_not_found");
		// An unknown app is a 404.
		expect((await admin("GET", "/apps/app_nosuchapp/leaderboard")).status).toBe(404);

		expect((await admin("DELETE", `/apps/${app.appid}/users/${ann.userkey}`)).status).toBe(200);
		expect((await asViewer("")).body.leaderboard).toEqual([
			{ rank: 1, userkey: bob.userkey, displayname: "Bob S.", friendsconverted: 1, earned: 5, email: "bob@x.com" },
		]);
	});
});
