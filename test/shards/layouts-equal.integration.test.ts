import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { forgetAppLayout, type Layout } from "../../src/db/app-layout";
import { shardPool } from "../../src/db/shards";
import { app as worker } from "../../src/http/app";
import { forgetCachedApp } from "../../src/http/auth";
import { withBindings } from "../../src/instrument/d1-metrics";
import { ledgerFor } from "../../src/ledger/stub";
import { d1DownFrom } from "../http/d1-down";
import { ADMIN_TOKEN, admin, createApp } from "../support/api";

// Issue 50 phase 2b-1, "Done when": the admin views of a seeded history
// (registrations, conversions, approvals, a rejection, a refund, a
// redemption) are the same for an app whose projection is in the control
// database ("one") and for an app whose projection is spread over the 4
// shards ("sharded"): users pages, rewards by status paged at several sizes,
// stats, the board's top N and each referrer's rank. The two apps' userkeys
// differ (a userkey is unique across apps), so their answers are compared
// with each app's userkeys replaced by the registration's order; and the
// sharded app's own rows, copied to the control database and read there
// once its layout says "one", give the very same pages, byte for byte.

type App = Awaited<ReturnType<typeof createApp>>;
const FRIENDS = [5, 4, 3, 2, 1, 0];

/** Sets an app and its test twin to `layout` (as the upgrade would; a new app's own is migration 0049's default). */
async function setLayout(app: App, layout: Layout): Promise<void> {
	await env.DB.prepare("UPDATE apps SET layout = ? WHERE appid = ? OR live_appid = ?").bind(layout, app.appid, app.appid).run();
	for (const appid of [app.appid, `${app.appid}_test`]) {
		forgetCachedApp(appid);
		forgetAppLayout(appid);
	}
}

interface Seeded {
	app: App;
	/** Every userkey, in registration order: what the comparison names them by. */
	users: string[];
	referrers: string[];
}

/** The history, the same for either app: referrer i has FRIENDS[i] friends, each converting once. */
async function seed(layout: Layout): Promise<Seeded> {
	const app = await createApp({
		campaignstartdate: "2020-01-01T00:00:00Z",
		autoapprove: false,
		rewardrules: [
			{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
			{ rewardusertype: "Friend", eventname: "Purchase", reward: 3, rewardunit: "USD" },
		],
	});
	await setLayout(app, layout);
	const users: string[] = [];
	const referrers: string[] = [];
	const conversions: { friend: string; customid: string }[] = [];
	for (const [i, count] of FRIENDS.entries()) {
		const ref = (await app.api("register", { email: `ref${i}@x.com`, name: `Ref ${i}` })).body;
		users.push(ref.userkey);
		referrers.push(ref.userkey);
		for (let j = 0; j < count; j++) {
			const friend = (await app.api("register", { email: `f${i}-${j}@x.com`, name: `Friend ${i}${j}`, referrercode: ref.referralcode }))
				.body;
			users.push(friend.userkey);
			const customid = `order-${i}-${j}`;
			const res = await app.api("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Purchase",
				customid,
				transactionvalue: "100",
				growthhack: "SaaS_Referrals",
			});
			expect(res.status, JSON.stringify(res.body)).toBe(200);
			conversions.push({ friend: friend.userkey, customid });
		}
	}
	for (const key of users) await ledgerFor(env, app.appid, key).flush();
	// Approvals of every other reward, one rejection, then a refund and a redemption.
	const all = await pageAll(app, 200, "");
	// Chosen by who the reward is of (its owner's and friend's places in the history), never by its random id.
	const place = (key: unknown) => users.indexOf(String(key));
	const statusOf = (r: Reward) => {
		const [owner, friend] = [place(r.userkey), place(r.frienduserkey)];
		if (owner === 3) return "Rejected";
		return owner === 0 || (owner + friend) % 2 === 0 ? "Approved" : "UnderReview";
	};
	const changes = all.map((r) => ({ rewarddtlid: r.rewarddtlid, rewardstatus: statusOf(r) }));
	const check = (res: { status: number; body: unknown }) => expect(res.status, JSON.stringify(res.body)).toBe(200);
	check(await app.api("changerewardstatus", { rewardslist: changes }));
	check(await app.api("reverseconversionevent", { customid: conversions[1]?.customid, refundvalue: "40" }));
	check(await app.api("redeemrewards", { userkey: referrers[0], amount: "5" }));
	for (const key of users) await ledgerFor(env, app.appid, key).flush();
	return { app, users, referrers };
}

type Reward = Record<string, unknown> & { rewarddtlid: string; createdat: string };

/** Every reward of the filter `query`, `limit` per page, following the cursors. */
async function pageAll(app: App, limit: number, query: string): Promise<Reward[]> {
	const rows: Reward[] = [];
	let cursor: string | null = null;
	for (let pages = 0; pages < 200; pages++) {
		const qs: string = `limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
		const res: { status: number; body: { rewards: Reward[]; nextcursor: string | null } } = await admin<{
			rewards: Reward[];
			nextcursor: string | null;
		}>("GET", `/apps/${app.appid}/rewards?${qs}`);
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		expect(res.body.rewards.length).toBeLessThanOrEqual(limit);
		rows.push(...res.body.rewards);
		cursor = res.body.nextcursor;
		if (!cursor) return rows;
	}
	throw new Error("too many pages");
}

/**
 * `value` with each app's userkeys named by their registration order, its appid and campaign id by a name, and the
 * fields that differ between two runs of one history left out (times, random codes, ids made of userkeys).
 */
function named(seeded: Seeded, value: unknown): unknown {
	let text = JSON.stringify(value);
	for (const [i, key] of seeded.users.entries()) text = text.split(key).join(`user#${i}`);
	return JSON.parse(text.split(seeded.app.appid).join("app"), (k, v) => {
		if (["createdat", "updatedat", "rewarddtlid", "reachedat", "referralcode"].includes(k)) return undefined;
		return k === "campaignid" && v === seeded.app.campaignid ? "campaign" : v;
	});
}

const STATUS_FILTERS = ["", "&status=Approved", "&status=UnderReview", "&status=Rejected", "&status=Approved,Rejected"];

let one: Seeded;
let sharded: Seeded;

beforeAll(async () => {
	one = await seed("one");
	sharded = await seed("sharded");
}, 120_000);

describe("a seeded history in either layout", { timeout: 60_000 }, () => {
	it("keeps a sharded app's projection in the shards, every shard holding some, the control database none", async () => {
		const pool = await shardPool(env);
		const count = (db: D1Database, table: string) =>
			db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE appid = ?`).bind(sharded.app.appid).first<number>("n");
		for (const table of ["rewards", "leaderboard_counts"]) expect(await count(env.DB, table), table).toBe(0);
		const perShard = await Promise.all(pool.shards.map((db) => count(db, "rewards")));
		for (const [shard, n] of perShard.entries()) expect(n, `SHARD_${shard}`).toBeGreaterThan(0);
		expect(await count(env.DB, "stats_slots")).toBeGreaterThan(0); // sign-ups and conversions stay in DB
		expect(perShard.reduce((a, b) => (a ?? 0) + (b ?? 0), 0)).toBe((await pageAll(sharded.app, 200, "")).length);
	});

	it("lists the same rewards by status, at every page size", async () => {
		for (const filter of STATUS_FILTERS) {
			const expected = named(one, await pageAll(one.app, 200, filter));
			for (const limit of [1, 2, 5, 7, 50]) {
				const got = await pageAll(sharded.app, limit, filter);
				expect(new Set(got.map((r) => r.rewarddtlid)).size, `${filter} ${limit}`).toBe(got.length);
				// The same multiset of rewards (their order within a millisecond follows their random ids).
				const sort = (rows: unknown) => (rows as unknown[]).map((r) => JSON.stringify(r)).sort();
				expect(sort(named(sharded, got)), `${filter} at ${limit} a page`).toEqual(sort(expected));
				// Newest first, whatever the page size.
				expect(got.map((r) => r.rewarddtlid)).toEqual((await pageAll(sharded.app, 200, filter)).map((r) => r.rewarddtlid));
			}
		}
	});

	it("counts the same stats, shows the same users and the same board, ranks included", async () => {
		const stats = async (s: Seeded) => named(s, (await admin("GET", `/apps/${s.app.appid}/stats`)).body);
		expect(await stats(sharded)).toEqual(await stats(one));
		const users = async (s: Seeded) => named(s, (await admin("GET", `/apps/${s.app.appid}/users?limit=100`)).body);
		expect(await users(sharded)).toEqual(await users(one));
		for (const period of ["all", "month"]) {
			const board = async (s: Seeded) => named(s, (await admin("GET", `/apps/${s.app.appid}/leaderboard?period=${period}&limit=4`)).body);
			expect(await board(sharded)).toEqual(await board(one));
		}
		for (const [i, key] of sharded.referrers.entries()) {
			const rank = async (s: Seeded, userkey: string) => (await s.app.api("getleaderboard", { userkey, limit: 3 })).body;
			const [a, b] = [await rank(one, one.referrers[i] ?? ""), await rank(sharded, key)];
			expect(named(sharded, b), `referrer ${i}`).toEqual(named(one, a));
		}
	});

	it("answers the same pages from its own rows copied into one database", async () => {
		const before = await Promise.all([1, 3, 50].map((limit) => pageAll(sharded.app, limit, "")));
		const board = (await admin("GET", `/apps/${sharded.app.appid}/leaderboard?limit=10`)).body;
		const pool = await shardPool(env);
		for (const db of pool.shards) {
			const rows = await db.prepare("SELECT * FROM rewards WHERE appid = ?").bind(sharded.app.appid).all<Record<string, unknown>>();
			for (const row of rows.results) {
				const columns = Object.keys(row);
				await env.DB.prepare(`INSERT INTO rewards (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`)
					.bind(...Object.values(row))
					.run();
			}
			const counts = await db
				.prepare("SELECT * FROM leaderboard_counts WHERE appid = ?")
				.bind(sharded.app.appid)
				.all<Record<string, unknown>>();
			for (const row of counts.results) {
				const columns = Object.keys(row);
				await env.DB.prepare(`INSERT INTO leaderboard_counts (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`)
					.bind(...Object.values(row))
					.run();
			}
		}
		await setLayout(sharded.app, "one");
		try {
			const after = await Promise.all([1, 3, 50].map((limit) => pageAll(sharded.app, limit, "")));
			expect(after).toEqual(before);
			expect((await admin("GET", `/apps/${sharded.app.appid}/leaderboard?limit=10`)).body).toEqual(board);
		} finally {
			await env.DB.batch([
				env.DB.prepare("DELETE FROM rewards WHERE appid = ?").bind(sharded.app.appid),
				env.DB.prepare("DELETE FROM leaderboard_counts WHERE appid = ?").bind(sharded.app.appid),
			]);
			await setLayout(sharded.app, "sharded");
		}
	});
});

describe("a shard down", () => {
	/** An admin GET sent to the Worker with SHARD_<n> down (its binding answers D1's "overloaded" from its first round trip). */
	async function getWithShardDown(path: string, shard: number) {
		const binding = `SHARD_${shard}`;
		const down = d1DownFrom((await shardPool(env)).shards[shard] as D1Database, 1);
		const log = vi.spyOn(console, "error").mockImplementation(() => {});
		try {
			const ctx = createExecutionContext();
			const request = new Request(`http://service.test/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
			const res = await worker.fetch(request, withBindings(env, { [binding]: down.db }), ctx);
			const body = (await res.json()) as Record<string, unknown>;
			await waitOnExecutionContext(ctx);
			return { status: res.status, body };
		} finally {
			log.mockRestore();
		}
	}

	it("answers 503 service_busy for a sharded app's views that need it, and serves the rest", async () => {
		const pool = await shardPool(env);
		const owner = sharded.referrers[0] ?? "";
		const home = pool.numberFor(sharded.app.appid, owner);
		const other = (home + 1) % pool.count;
		const busy = await getWithShardDown(`/apps/${sharded.app.appid}/rewards`, other);
		expect(busy.status).toBe(503);
		expect(busy.body).toMatchObject({ errorcode: "service_busy" });
		expect((await getWithShardDown(`/apps/${sharded.app.appid}/stats`, other)).status).toBe(503);
		expect((await getWithShardDown(`/apps/${sharded.app.appid}/leaderboard`, other)).status).toBe(503);
		// One user's rewards need only that user's shard; an app in the "one" layout needs none.
		const mine = await getWithShardDown(`/apps/${sharded.app.appid}/rewards?userkey=${owner}`, other);
		expect(mine.status, JSON.stringify(mine.body)).toBe(200);
		expect((mine.body.rewards as unknown[]).length).toBeGreaterThan(0);
		expect((await getWithShardDown(`/apps/${sharded.app.appid}/rewards?userkey=${owner}`, home)).status).toBe(503);
		for (const path of ["rewards", "stats", "leaderboard"])
			expect((await getWithShardDown(`/apps/${one.app.appid}/${path}`, other)).status, path).toBe(200);
	});
});
