import { env } from "cloudflare:workers";
import { forgetAppLayout } from "../../src/db/app-layout";
import { forgetShardDirectory } from "../../src/db/shards";
import { forgetCachedApp } from "../../src/http/auth";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, request } from "../support/api";
import { ok } from "./tour-http";

/**
 * The shard pool's statements (issue 50): the Worker's check of the shard
 * directory (read again here: the isolate may have read it before the
 * recording started) and the superuser's view of every shard and of one,
 * whose statements run on the shards and are explained against the shard
 * schema. Then an app whose projection is sharded (phase 2b-1): its
 * conversions' reward rows, counters and board written to the shards, and
 * every view that reads them there.
 */
export async function shardsTour(): Promise<void> {
	forgetShardDirectory();
	ok(await admin("GET", "/shards"), "the shard pool");
	ok(await admin("GET", "/shards/1"), "one shard");
	await shardedAppTour();
}

async function shardedAppTour(): Promise<void> {
	const app = await createApp({
		campaignstartdate: "2020-01-01T00:00:00Z",
		showleaderboard: true,
		rewardrules: [
			{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
			{ rewardusertype: "Friend", eventname: "Purchase", reward: 3, rewardunit: "USD" },
		],
	});
	const { api, appid } = app;
	await env.DB.prepare("UPDATE apps SET layout = 'sharded' WHERE appid = ? OR live_appid = ?").bind(appid, appid).run();
	for (const id of [appid, `${appid}_test`]) {
		forgetCachedApp(id);
		forgetAppLayout(id);
	}
	const referrer = ok(await api("register", { email: "sref@x.com", name: "Sam" }), "register").body;
	const friends: string[] = [];
	for (let i = 0; i < 3; i++) {
		const friend = ok(await api("register", { email: `sf${i}@x.com`, referrercode: referrer.referralcode }), "register").body;
		friends.push(friend.userkey);
		ok(
			await api("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Purchase",
				customid: `sharded-${appid}-${i}`,
				growthhack: "SaaS_Referrals",
			}),
			"registerconversionevent",
		);
	}
	for (const key of [referrer.userkey, ...friends]) await ledgerFor(env, appid, key).flush();
	ok(await admin("GET", `/apps/${appid}/rewards?limit=2`), "sharded rewards");
	ok(await admin("GET", `/apps/${appid}/rewards?status=Approved`), "sharded rewards by status");
	ok(await admin("GET", `/apps/${appid}/rewards?userkey=${referrer.userkey}`), "one user's sharded rewards");
	const [reward] = await ledgerFor(env, appid, referrer.userkey).listRewards();
	if (reward) ok(await admin("GET", `/apps/${appid}/rewards/${reward.rewarddtlid}`), "one sharded reward");
	ok(await admin("GET", `/apps/${appid}/stats`), "sharded stats");
	ok(await admin("GET", `/apps/${appid}/leaderboard`), "sharded board");
	ok(await api("getleaderboard", { userkey: referrer.userkey }), "sharded rank");
	const share = ok(await api("getsharepage", { userkey: referrer.userkey }), "getsharepage").body;
	await request(new URL(share.url).pathname + new URL(share.url).search);
	// A campaign nothing references: its deletion asks every shard for its rewards first.
	const spare = ok(await admin("POST", `/apps/${appid}/campaigns`, { campaignname: "Spare", rewardrules: [] }), "campaign").body;
	await admin("DELETE", `/apps/${appid}/campaigns/${spare.campaignid}`);
	ok(await admin("DELETE", `/apps/${appid}/users/${friends[0]}`), "erase a friend of a sharded app");
	ok(await admin("DELETE", `/apps/${appid}/users/${referrer.userkey}`), "erase a referrer of a sharded app");
	await admin("DELETE", `/apps/${appid}/testdata`);
}
