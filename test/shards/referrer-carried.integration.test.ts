import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardPool } from "../../src/db/shards";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";

/**
 * A two-sided conversion of a sharded app (issue 50 phase 2b-1, a new app's layout) whose referrer's records ride
 * in its friend's outbox (issue 49, ledger/carried-records.ts): the referrer's reward must reach the REFERRER's
 * shard, where the admin's rewards list, stats and board read a sharded app's rows, whichever way the friend's
 * records leave: the projection queue's consumer (a part is grouped by its own ledger, not the message's) or the
 * friend's explicit flush (which writes what its ledger keeps before it returns). A row written to the control
 * database or to the friend's shard is money no reader of the app shows.
 */

const rule = (rewardusertype: string, reward: number) => ({ rewardusertype, eventname: "Purchase", reward, rewardunit: "USD" });

async function convertedPair(tag: string) {
	const app = await createApp({ rewardrules: [rule("Referrer", 10), rule("Friend", 5)] });
	const referrer = (await app.api<{ userkey: string; referralcode: string }>("register", { email: `${tag}-ref@x.com` })).body;
	// A friend whose shard is not the referrer's: a part routed by its carrier (the friend) would land in the wrong one.
	const pool = await shardPool(env);
	expect(pool.count).toBeGreaterThan(1);
	let friend = { userkey: "" };
	for (
		let i = 0;
		i < 20 && (friend.userkey === "" || pool.numberFor(app.appid, friend.userkey) === pool.numberFor(app.appid, referrer.userkey));
		i++
	)
		friend = (await app.api<{ userkey: string }>("register", { email: `${tag}-fr${i}@x.com`, referrercode: referrer.referralcode })).body;
	expect(pool.numberFor(app.appid, friend.userkey)).not.toBe(pool.numberFor(app.appid, referrer.userkey));
	const res = await app.api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Purchase",
		customid: `${tag}-1`,
		growthhack: "SaaS_Referrals",
	});
	expect(res.status).toBe(200);
	return { app, referrer: referrer.userkey, friend: friend.userkey };
}

type Pair = Awaited<ReturnType<typeof convertedPair>>;

const rewardsOf = async (pair: Pair, userkey: string) =>
	(await admin("GET", `/apps/${pair.app.appid}/rewards?userkey=${userkey}`)).body.rewards as { reward: number; usertype: string }[];

const boardOf = async (pair: Pair) =>
	(await admin("GET", `/apps/${pair.app.appid}/leaderboard?limit=10`)).body.leaderboard as {
		userkey: string;
		friendsconverted: number;
		earned: number;
	}[];

/** What a reader of the app shows once both rewards are in: each on its owner's list, the referrer on the board, nothing in DB. */
async function shown(pair: Pair) {
	expect((await rewardsOf(pair, pair.referrer)).map((r) => [r.usertype, r.reward])).toEqual([["Referrer", 10]]);
	expect((await rewardsOf(pair, pair.friend)).map((r) => [r.usertype, r.reward])).toEqual([["Friend", 5]]);
	expect((await boardOf(pair)).map((e) => [e.userkey, e.friendsconverted, e.earned])).toEqual([[pair.referrer, 1, 10]]);
	const inControl = await env.DB.prepare("SELECT COUNT(*) AS n FROM rewards WHERE appid = ?").bind(pair.app.appid).first<{ n: number }>();
	expect(inControl?.n).toBe(0);
	const stats = (await admin("GET", `/apps/${pair.app.appid}/stats`)).body;
	// The stats counters the referrer's reward moves live in its shard too: both rewards counted, 10 + 5.
	expect(stats.totals).toMatchObject({ rewardscreated: 2, rewardamount: { USD: 15 } });
}

describe("a sharded app's two-sided conversion shows the referrer's reward (issues 49 and 50)", () => {
	it("through the projection queue: the referrer's part goes to the referrer's shard", async () => {
		const pair = await convertedPair("rc-queue");
		await until(
			"both rewards listed",
			async () => (await rewardsOf(pair, pair.referrer)).length + (await rewardsOf(pair, pair.friend)).length,
			(n) => n === 2,
		);
		await shown(pair);
	});

	it("through the friend's explicit flush: written to the referrer's shard before the flush returns", async () => {
		const pair = await convertedPair("rc-flush");
		// At once, before the queue's batch (max_batch_timeout 1 s) is consumed: the flush writes what its ledger keeps.
		await ledgerFor(env, pair.app.appid, pair.friend).flush();
		await shown(pair);
	});
});
