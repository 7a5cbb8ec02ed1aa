import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { findUserAndFriendsPage } from "../../src/db/user-reads";
import { formatDayMonthYear } from "../../src/domain/dates";
import { app as worker } from "../../src/http/app";
import { COUNT_HEADER } from "../../src/http/d1-metrics";
import type { FriendRecord } from "../../src/ledger/friends";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, request } from "../support/api";
import { until } from "../support/until";

/**
 * Issue 49 piece 4: the referrer's ledger keeps its friends
 * (src/ledger/friends.ts), and getfriendsandrewards answers from it. Each
 * test compares the answer with the one D1's page gives on the same data:
 * the handler before this change (`d1Answer`, its statements and mapping as
 * they were), so "the same JSON" is checked, not assumed.
 */

type App = Awaited<ReturnType<typeof createApp>>;
let nextCustomId = 1;

/** getfriendsandrewards as it was answered from D1 before issue 49 piece 4. */
async function d1Answer(appid: string, userkey: string, pagesize: number, pageindex: number) {
	const found = await findUserAndFriendsPage(env.DB, appid, { userkey }, pagesize, (pageindex - 1) * pagesize);
	if (!found) throw new Error("no such user in D1");
	const { user, friends } = found;
	const earned: Record<string, { rewards: unknown[]; total: number }> =
		friends.length > 0
			? await ledgerFor(env, appid, userkey).rewardsForFriends(
					friends.map((f) => f.userkey),
					100,
				)
			: {};
	return {
		friends: friends.map((friend) => ({
			userkey: friend.userkey,
			email: friend.email ?? "",
			useraccountid: friend.useraccountid ?? "",
			name: friend.name ?? "",
			profileimage: friend.profileimage ?? "",
			status: friend.status,
			regdate: formatDayMonthYear(friend.created_at),
			earnedrewards: earned[friend.userkey]?.rewards ?? [],
			earnedrewardstotal: earned[friend.userkey]?.total ?? 0,
		})),
		totalfriends: user.friends_count,
		convertedfriends: user.converted_friends_count,
		pageindex,
		pagesize,
	};
}

async function served(app: App, userkey: string, pagesize: number, pageindex: number) {
	const res = await app.api("getfriendsandrewards", { userkey, pagesize, pageindex });
	expect(res.status).toBe(200);
	const { success: _s, message: _m, ...body } = res.body;
	return body;
}

/** Every ledger of `userkeys` delivers its outbox to D1 now, until D1's converted count reads `converted`. */
async function settle(app: App, referrerkey: string, userkeys: string[], converted: number): Promise<void> {
	await until(
		"D1's converted count",
		async () => {
			for (const key of userkeys) await ledgerFor(env, app.appid, key).flush();
			return env.DB.prepare("SELECT converted_friends_count AS n FROM users WHERE userkey = ?").bind(referrerkey).first<{ n: number }>();
		},
		(row) => row?.n === converted,
	);
}

const event = (app: App, userkey: string, eventname: string) =>
	app.api("registerconversionevent", { userkey, eventname, customid: String(nextCustomId++), growthhack: "g", transactionvalue: 10 });

describe("the friends page from the referrer's ledger (issue 49 piece 4)", () => {
	it("answers what D1's page answered, from every way a friend is written, and then reads the ledger alone", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Signup", reward: 1, rewardunit: "USD" },
			],
		});
		const referrer = (await app.api("register", { email: "ref@x.com", name: "Ref" })).body;
		const code = referrer.referralcode;
		const reg = async (email: string, extra: Record<string, unknown> = {}) =>
			(await app.api("register", { email, name: email.split("@")[0], referrercode: code, ...extra })).body.userkey as string;
		// Registered with the code: converts with a Purchase (both sides rewarded).
		const buyer = await reg("buyer@x.com", { profileimage: "https://img.example/b.png", useraccountid: "acc-buyer" });
		// Registered with the code: only a Signup event (the referrer's reward), stays SignUp.
		const signup = await reg("signup@x.com");
		// Registered alone, then attributed by applyreferrercode; converts with an event no rule rewards.
		const late = (await app.api("register", { email: "late@x.com", name: "Late" })).body.userkey as string;
		expect((await app.api("applyreferrercode", { userkey: late, referrercode: code })).status).toBe(200);
		// Registered with the code, then renamed.
		const renamed = await reg("renamed@x.com");
		expect((await app.api("updateuser", { userkey: renamed, name: "New name", email: "renamed2@x.com" })).status).toBe(200);
		// Registered with the code, then erased.
		const erased = await reg("erased@x.com", { profileimage: "https://img.example/e.png" });
		// Imported with the referrer's code.
		const imported = await admin("POST", `/apps/${app.appid}/users:import`, {
			users: [{ email: "imported@x.com", name: "Imp", referrercode: code }],
		});
		expect(imported.status).toBe(201);
		const importedKey = imported.body.users[0].userkey as string;

		await event(app, buyer, "Purchase");
		await event(app, buyer, "Purchase");
		await event(app, signup, "Signup");
		await event(app, late, "Visit");
		expect((await admin("DELETE", `/apps/${app.appid}/users/${erased}`)).status).toBe(200);
		await settle(app, referrer.userkey, [referrer.userkey, buyer, signup, late], 2);

		for (const [pagesize, pageindex] of [
			[50, 1],
			[4, 1],
			[4, 2],
			[4, 3],
			[1, 6],
		] as const) {
			expect(await served(app, referrer.userkey, pagesize, pageindex)).toEqual(
				await d1Answer(app.appid, referrer.userkey, pagesize, pageindex),
			);
		}
		const page = await served(app, referrer.userkey, 50, 1);
		expect(page).toMatchObject({ totalfriends: 6, convertedfriends: 2 });
		expect(page.friends.map((f: { userkey: string }) => f.userkey)).toEqual([importedKey, erased, renamed, late, signup, buyer]);
		expect(page.friends[1]).toMatchObject({ email: "", name: "", profileimage: "", userkey: erased });
		expect(page.friends[2]).toMatchObject({ email: "renamed2@x.com", name: "New name" });

		// The ledger answers alone: a change D1 alone holds is not seen, and the erased friend's values are nowhere in it.
		await env.DB.prepare("UPDATE users SET name = 'only in D1', friends_count = 99 WHERE userkey IN (?, ?)")
			.bind(buyer, referrer.userkey)
			.run();
		const again = await served(app, referrer.userkey, 50, 1);
		expect(again.totalfriends).toBe(6);
		expect(again.friends[5].name).toBe("buyer");
		const rows = await runInDurableObject(ledgerFor(env, app.appid, referrer.userkey), async (_l, state) =>
			state.storage.sql.exec("SELECT * FROM friends").toArray(),
		);
		expect(JSON.stringify(rows)).not.toContain("erased@x.com");
		expect(JSON.stringify(rows)).not.toContain("e.png");
	});

	it("fills a referrer written before (friends only in D1) from D1 once, in pages, then answers the same", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "old-ref@x.com" })).body;
		// 1,203 friends as today's code left them: in D1 only (no ledger keeps them), 401 of them converted.
		await env.DB.prepare(
			`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1203)
			 INSERT INTO users (appid, userkey, referralcode, campaignid, isexistinguser, referrer_userid, attributed_at, created_at, updated_at,
			   email, name, status)
			 SELECT ?1, 'old' || ?3 || i, 'OLD' || ?3 || i, ?4, 0, (SELECT userid FROM users WHERE userkey = ?2),
			   '2026-01-02T00:00:00.000Z', '2026-01-0' || (1 + i % 9) || 'T00:00:00.000Z', '2026-01-02T00:00:00.000Z',
			   'old' || i || '@x.com', 'Old ' || i, CASE WHEN i % 3 = 0 THEN 'Converted' ELSE 'SignUp' END FROM n`,
		)
			.bind(app.appid, referrer.userkey, crypto.randomUUID().slice(0, 8), app.campaignid)
			.run();
		await env.DB.prepare("UPDATE users SET friends_count = 1203, converted_friends_count = 401 WHERE userkey = ?")
			.bind(referrer.userkey)
			.run();
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		expect(await ledger.friendsPage({ limit: 10, offset: 0, rewardsLimit: 100, shownToUser: false })).toBeNull();

		// A bounded fill: one page of 500 at a time, its position kept; the third page is short, and the ledger is filled.
		const user = {
			userid:
				(await env.DB.prepare("SELECT userid FROM users WHERE userkey = ?").bind(referrer.userkey).first<{ userid: number }>())?.userid ??
				0,
			friends: 1203,
		};
		expect(await ledger.fillFriends(app.appid, referrer.userkey, user, 1)).toBe(false);
		expect(await ledger.friendsPage({ limit: 10, offset: 0, rewardsLimit: 100, shownToUser: false })).toBeNull();

		// The read finishes it, then answers from the ledger: the same pages as D1's.
		for (const [pagesize, pageindex] of [
			[500, 1],
			[500, 2],
			[500, 3],
			[7, 100],
			[50, 30],
		] as const) {
			expect(await served(app, referrer.userkey, pagesize, pageindex)).toEqual(
				await d1Answer(app.appid, referrer.userkey, pagesize, pageindex),
			);
		}
		const kept = await ledger.friendsPage({ limit: 1, offset: 0, rewardsLimit: 100, shownToUser: false });
		expect(kept).toMatchObject({ total: 1203, converted: 401 });
		const state = await runInDurableObject(
			ledger,
			async (_l, s) => s.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'friends'").one().value,
		);
		expect(JSON.parse(state)).toMatchObject({ filled: true, total: 1203, converted: 401 });

		// A friend of the old ones converts now: the ledger moves it (no D1 read on the page).
		const oldFriend =
			(
				await env.DB.prepare("SELECT userkey FROM users WHERE email = 'old1@x.com' AND appid = ?")
					.bind(app.appid)
					.first<{ userkey: string }>()
			)?.userkey ?? "";
		await event(app, oldFriend, "Purchase");
		expect((await served(app, referrer.userkey, 1, 1)).convertedfriends).toBe(402);
	});

	it("a new referrer's first friend needs no fill, and a user without friends gets no ledger for the page", async () => {
		const app = await createApp();
		const lonely = (await app.api("register", { email: "lonely@x.com" })).body;
		expect(await served(app, lonely.userkey, 50, 1)).toEqual({
			friends: [],
			totalfriends: 0,
			convertedfriends: 0,
			pageindex: 1,
			pagesize: 50,
		});
		const hasTables = async (key: string) =>
			runInDurableObject(
				ledgerFor(env, app.appid, key),
				async (_l, s) => s.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'friends'").toArray().length > 0,
			);
		expect(await hasTables(lonely.userkey)).toBe(false);
		const friend = (await app.api("register", { email: "first@x.com", referrercode: lonely.referralcode })).body;
		const kept = await ledgerFor(env, app.appid, lonely.userkey).friendsPage({ limit: 5, offset: 0, rewardsLimit: 1, shownToUser: false });
		expect(kept?.friends.map((f) => f.userkey)).toEqual([friend.userkey]);
		expect(await served(app, lonely.userkey, 50, 1)).toEqual(await d1Answer(app.appid, lonely.userkey, 50, 1));
	});

	it("shows the ledger's counts on the share page, not D1's", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }] });
		const referrer = (await app.api("register", { email: "share-ref@x.com" })).body;
		const buyer = (await app.api("register", { email: "share-buyer@x.com", referrercode: referrer.referralcode })).body;
		await app.api("register", { email: "share-other@x.com", referrercode: referrer.referralcode });
		await event(app, buyer.userkey, "Purchase");
		await settle(app, referrer.userkey, [referrer.userkey, buyer.userkey], 1);
		// D1's counters say otherwise behind the service's back: the page shows the ledger's.
		await env.DB.prepare("UPDATE users SET friends_count = 99, converted_friends_count = 98 WHERE userkey = ?")
			.bind(referrer.userkey)
			.run();
		const link = (await app.api("getsharepage", { userkey: referrer.userkey })).body.url as string;
		const html = await (await request(new URL(link).pathname + new URL(link).search)).text();
		expect(html).toMatch(/<dd id="friends-joined">2<\/dd>/);
		expect(html).toMatch(/<dd id="friends-converted">1<\/dd>/);
	});

	it("keeps what the newer write says whatever order the writers land in (fill, conversion, profile, erasure)", async () => {
		const appid = `merge-${crypto.randomUUID().slice(0, 8)}`;
		const ledger = ledgerFor(env, appid, "referrer");
		const friend = (userkey: string, userid: number, fields: Partial<FriendRecord> = {}): FriendRecord => ({
			userkey,
			userid,
			email: `${userkey}@x.com`,
			useraccountid: null,
			name: userkey,
			profileimage: null,
			status: "SignUp",
			registeredAt: "2026-01-01T00:00:00.000Z",
			attributedAt: "2026-01-01T00:00:00.000Z",
			...fields,
		});
		// Erased, then a fill page read before the erasure: the values stay gone; its status is raised.
		await ledger.rememberFriends(appid, "referrer", [friend("a", 1)], "erased");
		await ledger.rememberFriends(appid, "referrer", [friend("a", 1, { status: "Converted" })], "filled");
		// A profile change, then a fill page read before it: the new name stays.
		await ledger.rememberFriends(appid, "referrer", [friend("b", 2, { name: "new" })], "profile");
		await ledger.rememberFriends(appid, "referrer", [friend("b", 2, { name: "old" })], "filled");
		// Converted before the fill brought it: it stays converted, counted once.
		await ledger.rememberFriends(appid, "referrer", [friend("c", 3)], "converted");
		await ledger.rememberFriends(appid, "referrer", [friend("c", 3)], "filled");
		// A profile change that lands after the erasure (its D1 write was before it) brings nothing back.
		await ledger.rememberFriends(appid, "referrer", [friend("d", 4)], "attributed");
		await ledger.rememberFriends(appid, "referrer", [friend("d", 4, { status: "Converted" })], "converted");
		await ledger.rememberFriends(appid, "referrer", [friend("d", 4)], "erased");
		const last = await ledger.rememberFriends(appid, "referrer", [friend("d", 4, { name: "back" })], "profile");
		expect(last).toMatchObject({ total: 4, converted: 3, filled: false });
		const rows = await runInDurableObject(ledger, async (_l, state) =>
			state.storage.sql.exec("SELECT userkey, name, email, status FROM friends ORDER BY userid").toArray(),
		);
		expect(rows).toEqual([
			{ userkey: "a", name: null, email: null, status: "Converted" },
			{ userkey: "b", name: "new", email: "b@x.com", status: "SignUp" },
			{ userkey: "c", name: "c", email: "c@x.com", status: "Converted" },
			{ userkey: "d", name: null, email: null, status: "Converted" },
		]);
	});

	it("costs no D1 round trip once the ledger keeps the friends (one before: the user and its page)", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }] });
		const referrer = (await app.api("register", { email: "rt-ref@x.com" })).body;
		for (const n of [1, 2, 3]) await app.api("register", { email: `rt-${n}@x.com`, referrercode: referrer.referralcode });
		const flagged: Env = Object.create(env, { D1_QUERY_COUNT: { value: "1", enumerable: true } });
		const roundTrips = async (userkey: string) => {
			const ctx = createExecutionContext();
			const res = await worker.request(
				"/saas/v1_0/getfriendsandrewards",
				{
					method: "POST",
					headers: { "content-type": "application/json", [COUNT_HEADER]: "1" },
					body: JSON.stringify({ apikey: app.apikey, privatekey: app.privatekey, userkey }),
				},
				flagged,
				ctx,
			);
			await waitOnExecutionContext(ctx);
			expect(res.status).toBe(200);
			return Number(res.headers.get("x-d1-roundtrips"));
		};
		await roundTrips(referrer.userkey); // the app's credentials into the isolate's cache (30 s)
		expect(await roundTrips(referrer.userkey)).toBe(0);
		// A referrer written before (its ledger forgot its friends): D1's user and page, once; then none.
		await runInDurableObject(ledgerFor(env, app.appid, referrer.userkey), async (_l, state) => {
			state.storage.sql.exec("DELETE FROM friends");
			state.storage.sql.exec("DELETE FROM meta WHERE key = 'friends'");
		});
		expect(await roundTrips(referrer.userkey)).toBe(1);
		expect(await roundTrips(referrer.userkey)).toBe(0);
	});

	it("migrates a ledger of today's code (schema 13, its rewards, no friends) and answers its friends as D1 did", async () => {
		const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }] });
		const referrer = (await app.api("register", { email: "v13-ref@x.com" })).body;
		const friends: string[] = [];
		for (const n of [1, 2, 3]) {
			friends.push((await app.api("register", { email: `v13-${n}@x.com`, referrercode: referrer.referralcode })).body.userkey);
		}
		for (const key of friends.slice(0, 2)) await event(app, key, "Purchase");
		await settle(app, referrer.userkey, [referrer.userkey, ...friends], 2);
		// The ledger as today's code leaves it: version 13, no friends table, no friends state; then its next start migrates it.
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		await runInDurableObject(ledger, async (_l, state) => {
			state.storage.sql.exec("DROP TABLE friends");
			// Step 14's table too (the profile, issue 49 pieces 2-3): a ledger at 13 has neither.
			state.storage.sql.exec("DROP TABLE profile");
			state.storage.sql.exec("DELETE FROM meta WHERE key = 'friends'");
			// And the index by friend that step 16 dropped (a ledger at 13 had it).
			state.storage.sql.exec("CREATE INDEX rewards_friend ON rewards(friend_userkey, seq) WHERE usertype = 'Referrer'");
			// And the two indexes step 17 folded into one (a ledger at 13 had them, not the fold).
			state.storage.sql.exec("DROP INDEX rewards_rule_friend_event");
			state.storage.sql.exec("CREATE UNIQUE INDEX rewards_event_key ON rewards(customid, key)");
			state.storage.sql.exec("CREATE INDEX rewards_rule_friend ON rewards(ruleid, friend_userkey)");
			state.storage.sql.exec("UPDATE meta SET value = '13' WHERE key = 'schema_version'");
			expect(migrateLedger(state.storage, LEDGER_MIGRATIONS)).toBe(LEDGER_MIGRATIONS.length);
			expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM rewards").one().n).toBe(2);
		});
		expect(await ledger.friendsPage({ limit: 50, offset: 0, rewardsLimit: 100, shownToUser: false })).toBeNull();
		const answer = await served(app, referrer.userkey, 50, 1);
		expect(answer).toEqual(await d1Answer(app.appid, referrer.userkey, 50, 1));
		expect(answer).toMatchObject({ totalfriends: 3, convertedfriends: 2 });
		expect(answer.friends.map((f: { earnedrewardstotal: number }) => f.earnedrewardstotal)).toEqual([0, 1, 1]);
		expect(await ledger.friendsPage({ limit: 50, offset: 0, rewardsLimit: 100, shownToUser: false })).toMatchObject({
			total: 3,
			converted: 2,
		});
	});

	it("repairs a friend its ledger missed (a failed ledger call) from the share page's D1 count, once per count", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "repair-ref@x.com" })).body;
		const kept = (await app.api("register", { email: "repair-a@x.com", referrercode: referrer.referralcode })).body.userkey as string;
		const missed = (await app.api("register", { email: "repair-b@x.com", referrercode: referrer.referralcode })).body.userkey as string;
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		/** Takes `userkey` out of the ledger as if its attribution's ledger call had failed after D1's write. */
		const forget = (userkey: string) =>
			runInDurableObject(ledger, async (_l, state) => {
				const sql = state.storage.sql;
				sql.exec("DELETE FROM friends WHERE userkey = ?", userkey);
				const friends = JSON.parse(sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'friends'").one().value);
				sql.exec("UPDATE meta SET value = ? WHERE key = 'friends'", JSON.stringify({ ...friends, total: friends.total - 1 }));
			});
		await forget(missed);
		expect((await served(app, referrer.userkey, 50, 1)).friends.map((f: { userkey: string }) => f.userkey)).toEqual([kept]);
		const link = (await app.api("getsharepage", { userkey: referrer.userkey })).body.url as string;
		const sharePage = async () => (await request(new URL(link).pathname + new URL(link).search)).text();
		await sharePage();
		await until(
			"the missed friend back in the ledger",
			async () => ledger.friendsPage({ limit: 50, offset: 0, rewardsLimit: 1, shownToUser: false }),
			(page) => page?.total === 2,
		);
		expect(await served(app, referrer.userkey, 50, 1)).toEqual(await d1Answer(app.appid, referrer.userkey, 50, 1));
		// A D1 count that drifted from the rows costs one refill, not one per view: a later gap at the same count stays.
		await env.DB.prepare("UPDATE users SET friends_count = 50 WHERE userkey = ?").bind(referrer.userkey).run();
		await sharePage();
		const state = async () =>
			runInDurableObject(ledger, async (_l, s) =>
				JSON.parse(s.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'friends'").one().value),
			);
		await until("the refill for the count of 50", state, (friends) => friends.checked === 50 && friends.filled === true);
		await forget(kept);
		// What the share page asks after its answer, awaited here: the ledger keeps what it has.
		const row = await env.DB.prepare("SELECT userid FROM users WHERE userkey = ?").bind(referrer.userkey).first<{ userid: number }>();
		expect(await ledger.fillFriends(app.appid, referrer.userkey, { userid: row?.userid ?? 0, friends: 50 }, 20)).toBe(true);
		expect(await state()).toMatchObject({ filled: true, total: 1, checked: 50 });
		// A count above the one checked (a new friend D1 has and the ledger missed) starts a refill again.
		expect(await ledger.fillFriends(app.appid, referrer.userkey, { userid: row?.userid ?? 0, friends: 51 }, 20)).toBe(true);
		expect(await state()).toMatchObject({ filled: true, total: 2, checked: 51 });
	});
});
