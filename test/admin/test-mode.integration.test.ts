import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Layout } from "../../src/db/app-layout";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, client, createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";
import { createOneDatabaseApp, projectionRows } from "../support/layout";

/** Test mode in the admin API (docs/test-mode.md): ?mode=test reads and DELETE .../testdata. */

async function appWithBothModes(layout: Layout) {
	// Either layout (issue 50 phase 2b-1): the twin's projection in DB, or in the shards.
	const app = layout === "one" ? await createOneDatabaseApp() : await createApp();
	const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
	const test = client({ apikey: testapikey, privatekey: testprivatekey });
	// Each mode: a referrer, a friend who converts, a click on the referrer's link.
	const fill = async (api: typeof test, tag: string) => {
		const ref = (await api("register", { email: `${tag}-ref@x.com` })).body;
		const friend = (await api("register", { email: `${tag}-friend@x.com`, referrercode: ref.referralcode })).body;
		const res = await api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Signup",
			customid: `${tag}-1`,
			growthhack: "SaaS_Referrals",
		});
		expect(res.body.success).toBe(true);
		// A first event other than Signup converts the friend (the stats' conversions).
		const purchase = { userkey: friend.userkey, eventname: "Purchase", customid: `${tag}-2`, growthhack: "SaaS_Referrals" };
		expect((await api("registerconversionevent", purchase)).body.success).toBe(true);
		await request(`/r/${ref.referralcode}`, { redirect: "manual" });
		await flushClicks(ref.referralcode);
		for (const u of [ref, friend]) await ledgerFor(env, tag === "test" ? `${app.appid}_test` : app.appid, u.userkey).flush();
		return { ref, friend };
	};
	return { ...app, test, live: await fill(app.api, "live"), testUsers: await fill(test, "test") };
}

const userkeys = async (appid: string, query = "") =>
	((await admin("GET", `/apps/${appid}/users${query}`)).body.users as { userkey: string }[]).map((u) => u.userkey).sort();

describe.each(["one", "sharded"] as const)("admin ?mode=test, projection layout %s", (layout) => {
	it("shows each mode only its own users, rewards and stats", async () => {
		const app = await appWithBothModes(layout);
		expect(await userkeys(app.appid)).toEqual([app.live.ref.userkey, app.live.friend.userkey].sort());
		expect(await userkeys(app.appid, "?mode=live")).toEqual([app.live.ref.userkey, app.live.friend.userkey].sort());
		expect(await userkeys(app.appid, "?mode=test")).toEqual([app.testUsers.ref.userkey, app.testUsers.friend.userkey].sort());
		// The live app's user page does not know a test user, and the reverse.
		expect((await admin("GET", `/apps/${app.appid}/users/${app.testUsers.ref.userkey}`)).status).toBe(404);
		expect((await admin("GET", `/apps/${app.appid}/users/${app.live.ref.userkey}?mode=test`)).status).toBe(404);
		const rewards = async (q: string) =>
			((await admin("GET", `/apps/${app.appid}/rewards${q}`)).body.rewards as { userkey: string }[]).map((r) => r.userkey);
		expect(new Set(await rewards(""))).toEqual(new Set([app.live.ref.userkey, app.live.friend.userkey]));
		expect(new Set(await rewards("?mode=test"))).toEqual(new Set([app.testUsers.ref.userkey, app.testUsers.friend.userkey]));
		const live = (await admin("GET", `/apps/${app.appid}/stats`)).body.totals;
		const test = (await admin("GET", `/apps/${app.appid}/stats?mode=test`)).body.totals;
		expect(live).toMatchObject({ signups: 2, conversions: 1, clicks: 1 });
		expect(test).toMatchObject({ signups: 2, conversions: 1, clicks: 1 });
		expect((await admin("GET", `/apps/${app.appid}/users?mode=sandbox`)).body).toMatchObject({ errorcode: "validation_failed" });
		expect((await admin("GET", `/apps/${app.appid}_test/users`)).status).toBe(404);
	});

	it("DELETE .../testdata erases what the test keys made and leaves live data as it was", async () => {
		const app = await appWithBothModes(layout);
		const twin = `${app.appid}_test`;
		const count = async (appid: string) => {
			const row = await env.DB.prepare(
				`SELECT (SELECT COUNT(*) FROM users WHERE appid = ?1) AS users, (SELECT COUNT(*) FROM conversion_events WHERE appid = ?1) AS events,
				   (SELECT COUNT(*) FROM outbox_events WHERE appid = ?1) AS outbox`,
			)
				.bind(appid)
				.first<{ users: number; events: number; outbox: number }>();
			// The projection's rows, wherever the layout keeps them: the control database and every shard.
			const projected = async (table: string) => (await projectionRows(`SELECT 1 AS one FROM ${table} WHERE appid = ?`, appid)).length;
			return {
				...row!,
				rewards: await projected("rewards"),
				stats: await projected("stats_slots"),
				board: await projected("leaderboard_counts"),
			};
		};
		const liveBefore = await count(app.appid);
		expect((await count(twin)).users).toBe(2);
		expect((await count(twin)).rewards).toBe(2);
		const liveStats = (await admin("GET", `/apps/${app.appid}/stats`)).body;

		const res = await admin("DELETE", `/apps/${app.appid}/testdata`);
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ appid: app.appid, done: true, deleted: { users: 2 } });
		expect(await count(twin)).toEqual({ users: 0, events: 0, rewards: 0, outbox: 0, stats: 0, board: 0 });
		expect(await ledgerFor(env, twin, app.testUsers.ref.userkey).listRewards()).toEqual([]);
		// Live: every row, ledger and number as before.
		expect(await count(app.appid)).toEqual(liveBefore);
		expect(await ledgerFor(env, app.appid, app.live.ref.userkey).listRewards()).toHaveLength(1);
		expect((await admin("GET", `/apps/${app.appid}/stats`)).body).toEqual(liveStats);
		expect((await app.api("getuserbalance", { userkey: app.live.ref.userkey, campaignid: app.campaignid })).status).toBe(200);

		// The test keys still work and start afresh: the erased referral code refers nobody, a new user earns again.
		expect((await app.test("validatereferrercode", { referrercode: app.testUsers.ref.referralcode })).body.success).toBe(false);
		const again = (await app.test("register", { email: "test-ref@x.com" })).body;
		const friend = (await app.test("register", { email: "f2@x.com", referrercode: again.referralcode })).body;
		const event = { userkey: friend.userkey, eventname: "Signup", customid: "test-1", growthhack: "SaaS_Referrals" };
		expect((await app.test("registerconversionevent", event)).body).toMatchObject({ success: true, duplicate: false });
		// A second call has nothing left to erase but the new data; an app without a twin is done at once.
		expect((await admin("DELETE", `/apps/${app.appid}/testdata`)).body).toMatchObject({ done: true, deleted: { users: 2 } });
		expect((await admin("DELETE", "/apps/app_nosuchapp/testdata")).status).toBe(404);
	});
});
