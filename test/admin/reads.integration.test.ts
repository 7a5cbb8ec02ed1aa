import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, request } from "../support/api";
import { flushClicks } from "../support/clicks";
import { until } from "../support/until";

type App = Awaited<ReturnType<typeof createApp>>;
let nextCustomId = 1;

const register = async (app: App, body: Record<string, unknown>) => {
	const res = await app.api("register", body);
	if (!res.body.success) throw new Error(JSON.stringify(res.body));
	return res.body as { userkey: string; referralcode: string };
};
async function event(
	app: App,
	userkey: string,
	eventname = "Signup",
	customid = String(nextCustomId++),
	extra: Record<string, unknown> = {},
) {
	const res = await app.api("registerconversionevent", { userkey, eventname, customid, growthhack: "SaaS_Referrals", ...extra });
	if (!res.body.success) throw new Error(JSON.stringify(res.body));
	return res.body;
}
const flush = (app: App, userkey: string) => ledgerFor(env, app.appid, userkey).flush();
const today = () => new Date().toISOString().slice(0, 10);

/** Every page of a list, following nextcursor; `between` runs after each page. */
async function allPages(path: string, key: string, limit: number, between: () => Promise<void> = async () => {}) {
	const items: Record<string, any>[] = [];
	let cursor: string | null = null;
	for (let i = 0; i < 50; i++) {
		const sep = path.includes("?") ? "&" : "?";
		const res: { status: number; body: Record<string, any> } = await admin(
			"GET",
			`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`,
		);
		expect(res.status).toBe(200);
		expect(res.body[key].length).toBeLessThanOrEqual(limit);
		items.push(...res.body[key]);
		cursor = res.body.nextcursor;
		if (cursor === null) return items;
		await between();
	}
	throw new Error("paging did not end");
}

describe("GET /apps/{appid}/users", { timeout: 30_000 }, () => {
	it("pages newest first without losing or repeating anyone while users register", async () => {
		const app = await createApp();
		const before: string[] = [];
		for (let i = 0; i < 7; i++) before.push((await register(app, { email: `p${i}@x.com` })).userkey);
		let extra = 0;
		const seen = await allPages(`/apps/${app.appid}/users`, "users", 3, async () => {
			await register(app, { email: `late${extra++}@x.com` });
		});
		const keys = seen.map((u) => u.userkey);
		expect(new Set(keys).size).toBe(keys.length);
		expect(keys.filter((k) => before.includes(k))).toEqual([...before].reverse());
		expect(extra).toBeGreaterThan(1);
	});

	it("searches by email prefix, account id, userkey and referral code, and shows counts and the referrer", async () => {
		const app = await createApp();
		const ref = await register(app, { email: "alice@shop.com", useraccountid: "acct-1", name: "Alice" });
		const friend = await register(app, { email: "bob@other.com", referrercode: ref.referralcode });
		await event(app, friend.userkey, "Purchase");
		const search = async (q: string) =>
			(await admin("GET", `/apps/${app.appid}/users?q=${encodeURIComponent(q)}`)).body.users.map((u: { userkey: string }) => u.userkey);
		expect(await search("alice@")).toEqual([ref.userkey]);
		expect(await search("acct-")).toEqual([ref.userkey]);
		expect(await search(ref.referralcode.toLowerCase())).toEqual([ref.userkey]);
		expect(await search(friend.userkey.slice(0, 12))).toEqual([friend.userkey]);
		expect(await search("%")).toEqual([]);
		// The admin views follow the projection of the event (issue 49).
		const [alice] = await until(
			"the conversion counted",
			async () => (await admin("GET", `/apps/${app.appid}/users?q=alice`)).body.users,
			(users) => users[0]?.converted === 1,
		);
		expect(alice).toMatchObject({ email: "alice@shop.com", name: "Alice", friends: 1, converted: 1, referreruserkey: null });
		expect(alice.createdat).toMatch(/^\d{4}-/);
		const [bob] = (await admin("GET", `/apps/${app.appid}/users?q=bob`)).body.users;
		expect(bob).toMatchObject({ referreruserkey: ref.userkey, status: "Converted" });
	});

	it("refuses bad limits and cursors with 400 and keeps apps apart", async () => {
		const app = await createApp();
		const other = await createApp();
		const theirs = await register(other, { email: "them@x.com" });
		for (const qs of ["limit=0", "limit=201", "limit=abc", "cursor=nonsense", `cursor=${btoa('["x"]')}`, `cursor=${btoa("[1,2]")}`]) {
			const res = await admin("GET", `/apps/${app.appid}/users?${qs}`);
			expect(res.status, qs).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
		}
		expect((await admin("GET", `/apps/${app.appid}/users?limit=200`)).status).toBe(200);
		expect((await admin("GET", `/apps/${app.appid}/users?q=them`)).body.users).toEqual([]);
		expect((await admin("GET", `/apps/${app.appid}/users/${theirs.userkey}`)).status).toBe(404);
		expect((await admin("GET", `/apps/${app.appid}/users/${theirs.userkey}/friends`)).status).toBe(404);
		expect((await admin("GET", "/apps/app_nope/users")).status).toBe(404);
	});
});

describe("GET /apps/{appid}/users/{userkey}", { timeout: 30_000 }, () => {
	it("gives the profile, referrer, balance of all campaigns, clicks and paged friends", async () => {
		const app = await createApp();
		const ref = await register(app, { email: "ref@x.com" });
		const friends: string[] = [];
		for (let i = 0; i < 5; i++) friends.push((await register(app, { email: `f${i}@x.com`, referrercode: ref.referralcode })).userkey);
		await event(app, friends[0] as string);
		await flush(app, ref.userkey);
		for (let i = 0; i < 2; i++) expect((await request(`/r/${ref.referralcode}`, { redirect: "manual" })).status).toBe(302);
		await flushClicks(ref.referralcode);
		const res = await admin("GET", `/apps/${app.appid}/users/${ref.userkey}`);
		expect(res.status).toBe(200);
		expect(res.body.user).toMatchObject({ userkey: ref.userkey, friends: 5 });
		expect(res.body.referrer).toBeNull();
		expect(res.body.userbalance[0]).toMatchObject({ rewardunit: "USD", total: 10, approved: 10 });
		expect(res.body.clicks).toEqual({ total: 2, days: [{ day: today(), clicks: 2 }] });
		const friend = await admin("GET", `/apps/${app.appid}/users/${friends[0]}`);
		expect(friend.body.referrer).toMatchObject({ userkey: ref.userkey, email: "ref@x.com", referralcode: ref.referralcode });
		const paged = await allPages(`/apps/${app.appid}/users/${ref.userkey}/friends`, "friends", 2);
		expect(paged.map((f) => f.userkey)).toEqual([...friends].reverse());
	});
});

describe("GET /apps/{appid}/rewards and POST /rewards/status", { timeout: 30_000 }, () => {
	async function setup() {
		const app = await createApp({ autoapprove: false });
		const second = await admin("POST", `/apps/${app.appid}/campaigns`, {
			campaignname: "Second",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 3, rewardunit: "EUR" }],
		});
		const ref = await register(app, { email: "ref@x.com", phone: "+15550001" });
		const honest = await register(app, { email: "honest@x.com", referrercode: ref.referralcode });
		const twin = await register(app, { email: "twin@x.com", phone: "+15550001", referrercode: ref.referralcode });
		await event(app, honest.userkey);
		await event(app, twin.userkey);
		await event(app, honest.userkey, "Purchase", undefined, { campaignid: String(second.body.campaignid) });
		for (const u of [ref, honest, twin]) await flush(app, u.userkey);
		return { app, ref, honest, twin, second: second.body.campaignid as number };
	}

	it("lists the app's rewards newest first with filters and pages", async () => {
		const { app, ref, twin, second } = await setup();
		const all = await allPages(`/apps/${app.appid}/rewards`, "rewards", 2);
		expect(all).toHaveLength(5);
		expect(new Set(all.map((r) => r.rewarddtlid)).size).toBe(5);
		const times = all.map((r) => r.createdat);
		expect([...times].sort().reverse()).toEqual(times);
		const list = async (qs: string) => (await admin("GET", `/apps/${app.appid}/rewards?${qs}`)).body.rewards as Record<string, any>[];
		const suspicious = await list("status=Suspicious");
		expect(suspicious.length).toBe(2);
		expect(suspicious.every((r) => [ref.userkey, twin.userkey].includes(r.userkey))).toBe(true);
		expect((await list("status=UnderReview,Suspicious")).length).toBe(4);
		expect(await list("status=approved")).toMatchObject([{ campaignid: second }]);
		expect(await list(`campaignid=${second}`)).toMatchObject([{ reward: 3, rewardunit: "EUR", userkey: ref.userkey }]);
		expect((await list(`userkey=${twin.userkey}`)).length).toBe(1);
		expect((await list(`from=${today()}&to=${today()}`)).length).toBe(5);
		expect((await list("to=2000-01-01")).length).toBe(0);
		expect((await list("from=2999-01-01")).length).toBe(0);
		for (const qs of ["status=Pending", "campaignid=abc", "from=yesterday", "limit=500", "cursor=%%%"]) {
			expect((await admin("GET", `/apps/${app.appid}/rewards?${qs}`)).status, qs).toBe(400);
		}
	});

	it("changes statuses all or none through the changerewardstatus path; another app's reward is 404", async () => {
		const { app, twin } = await setup();
		const [flagged] = (await admin("GET", `/apps/${app.appid}/rewards?status=Suspicious&userkey=${twin.userkey}`)).body.rewards;
		const other = await createApp();
		const outsider = await register(other, { email: "o@x.com" });
		const bad = await admin("POST", `/apps/${app.appid}/rewards/status`, {
			changes: [
				{ rewarddtlid: flagged.rewarddtlid, rewardstatus: "Approved", message: "ok" },
				{ rewarddtlid: `${outsider.userkey}-1`, rewardstatus: "Approved" },
			],
		});
		expect(bad.status).toBe(404);
		expect((await app.api("checkrewardstatus", { rewarddtlid: flagged.rewarddtlid })).body.rewardstatus).toBe("Suspicious");
		expect((await admin("POST", `/apps/${app.appid}/rewards/status`, { changes: [] })).status).toBe(400);
		const ok = await admin("POST", `/apps/${app.appid}/rewards/status`, {
			changes: [{ rewarddtlid: flagged.rewarddtlid, rewardstatus: "Approved", message: "Checked by phone" }],
		});
		expect(ok).toMatchObject({ status: 200, body: { updated: 1 } });
		expect((await app.api("checkrewardstatus", { rewarddtlid: flagged.rewarddtlid })).body).toMatchObject({
			rewardstatus: "Approved",
			comment: "Checked by phone",
		});
		expect(
			(
				await admin("POST", `/apps/${other.appid}/rewards/status`, {
					changes: [{ rewarddtlid: flagged.rewarddtlid, rewardstatus: "Rejected" }],
				})
			).status,
		).toBe(404);
	});
});

describe("GET /apps/{appid}/stats", { timeout: 30_000 }, () => {
	it("counts clicks, signups, conversions and rewards per day once, whatever the retries", async () => {
		const app = await createApp();
		const ref = await register(app, { email: "ref@x.com" });
		await register(app, { email: "ref@x.com" }); // already registered: not a new signup
		await request(`/r/${ref.referralcode}`, { redirect: "manual" });
		await request(`/r/${ref.referralcode.toLowerCase()}`, { redirect: "manual" });
		await request("/r/NOSUCHCODE", { redirect: "manual" });
		await flushClicks(ref.referralcode);
		const friend = await register(app, { email: "f@x.com", referrercode: ref.referralcode });
		await event(app, friend.userkey, "Signup", "9001");
		await event(app, friend.userkey, "Signup", "9001"); // a retry
		await event(app, friend.userkey, "Purchase", "9002");
		await event(app, friend.userkey, "Purchase", "9002");
		for (const u of [ref, friend, ref]) await flush(app, u.userkey);
		const [reward] = await ledgerFor(env, app.appid, ref.userkey).listRewards();
		expect((await app.api("redeemrewards", { userkey: ref.userkey, amount: 4 })).body.success).toBe(true);
		await flush(app, ref.userkey);
		await flush(app, ref.userkey);
		expect(reward).toBeDefined();

		const res = await admin("GET", `/apps/${app.appid}/stats`);
		expect(res.status).toBe(200);
		expect(res.body.days).toHaveLength(30);
		expect(res.body.to).toBe(today());
		const day = res.body.days.at(-1);
		expect(day).toEqual({
			day: today(),
			clicks: 2,
			signups: 2,
			referredsignups: 1,
			conversions: 1,
			rewardscreated: 2,
			rewardamount: { USD: 20 },
			redeemed: { USD: 4 },
		});
		expect(res.body.totals).toMatchObject({ signups: 2, clicks: 2, conversions: 1 });
		expect(res.body.referredshare).toBe(0.5);
		expect(res.body.topreferrers).toEqual([
			{ userkey: ref.userkey, email: "ref@x.com", name: null, referralcode: ref.referralcode, conversions: 1 },
		]);
		const other = await admin("GET", `/apps/${app.appid}/stats?campaignid=999999&from=${today()}&to=${today()}`);
		expect(other.body.totals.signups).toBe(0);
		expect(other.body.days).toHaveLength(1);
		for (const qs of ["from=2026-02-30", "from=2026-01-10&to=2026-01-01", "from=2020-01-01&to=2026-01-01", "to=today", "campaignid=x"]) {
			expect((await admin("GET", `/apps/${app.appid}/stats?${qs}`)).status, qs).toBe(400);
		}
		expect((await admin("GET", "/apps/app_nope/stats")).status).toBe(404);
	});
});

describe("GET /apps/{appid}/campaigns", { timeout: 30_000 }, () => {
	it("lists every campaign with its rules, social actions and coupons left", async () => {
		const app = await createApp();
		await admin("POST", `/apps/${app.appid}/campaigns/${app.campaignid}/coupons`, { coupons: [{ coupon: "A" }, { coupon: "B" }] });
		const { campaigns } = (await admin("GET", `/apps/${app.appid}/campaigns`)).body;
		expect(campaigns).toHaveLength(1);
		expect(campaigns[0].rewardrules).toHaveLength(2);
		expect(campaigns[0].rewardrules[0]).toMatchObject({ rewardusertype: "Referrer", eventname: "Signup", reward: 10 });
		expect(campaigns[0].rewardrules[0].ruleid).toEqual(expect.any(Number));
		expect(campaigns[0].socialactions.map((s: { socialactionname: string }) => s.socialactionname)).toEqual(["Facebook", "Mail"]);
		expect(campaigns[0].couponsavailable).toBe(2);
	});
});

describe("stats counters under retries, races and replays", { timeout: 30_000 }, () => {
	it("counts a signup and a conversion once when the same calls race", async () => {
		const app = await createApp();
		const ref = await register(app, { email: "ref@x.com" });
		const racers = await Promise.all(
			Array.from({ length: 5 }, () => app.api("register", { email: "same@x.com", referrercode: ref.referralcode })),
		);
		const friendKey = racers[0]?.body.userkey as string;
		expect(new Set(racers.map((r) => r.body.userkey)).size).toBe(1);
		await Promise.all(
			Array.from({ length: 5 }, () =>
				app.api("registerconversionevent", { userkey: friendKey, eventname: "Purchase", customid: "777", growthhack: "SaaS_Referrals" }),
			),
		);
		// The stats follow the projection of the event (issue 49): counted once it is in.
		const { totals, topreferrers } = await until(
			"the conversion counted",
			async () => (await admin("GET", `/apps/${app.appid}/stats`)).body,
			(stats) => stats.totals.conversions > 0,
		);
		expect(totals).toMatchObject({ signups: 2, referredsignups: 1, conversions: 1 });
		expect(topreferrers).toMatchObject([{ userkey: ref.userkey, conversions: 1 }]);
	});

	it("a replayed or stale projection flush counts nothing; a redemption counts only what it added", async () => {
		const { rewardCounters } = await import("../../src/db/stats");
		const { projectionStatement } = await import("../../src/db/projection");
		const app = await createApp();
		const userkey = (await register(app, { email: "p@x.com" })).userkey;
		const row = {
			seq: 1,
			campaignid: app.campaignid,
			eventname: "Signup",
			usertype: "Referrer",
			amount: 1250,
			redeemed: 0,
			reversed: 0,
			settled: 0,
			percent: 0,
			fraudsignals: "[]",
			rewardunit: "USD",
			rewardtype: "InstoreCredits",
			status: "Approved",
			comment: null,
			friend_userkey: null,
			created_at: "2026-01-05T10:00:00.000Z",
			updated_at: "2026-01-05T10:00:00.000Z",
			version: 1,
		} as unknown as Parameters<typeof projectionStatement>[3];
		const flushOnce = (r: typeof row) =>
			env.DB.batch([rewardCounters(env.DB, app.appid, userkey, r), projectionStatement(env.DB, app.appid, userkey, r)]);
		await flushOnce(row);
		await flushOnce(row);
		const redeemedRow = { ...row, redeemed: 500, version: 2, updated_at: "2026-01-06T09:00:00.000Z" };
		await flushOnce(redeemedRow);
		await flushOnce(redeemedRow);
		await flushOnce(row); // stale: older version
		const stats = (await admin("GET", `/apps/${app.appid}/stats?from=2026-01-05&to=2026-01-06`)).body;
		expect(stats.days.map((d: Record<string, unknown>) => [d.rewardscreated, d.rewardamount, d.redeemed])).toEqual([
			[1, { USD: 12.5 }, {}],
			[0, {}, { USD: 5 }],
		]);
	});

	it("counts a late attribution (applyreferrercode) as a referred signup, once", async () => {
		const app = await createApp();
		const ref = await register(app, { email: "ref@x.com" });
		const late = await register(app, { email: "late@x.com" });
		const apply = () => app.api("applyreferrercode", { userkey: late.userkey, referrercode: ref.referralcode });
		const results = await Promise.all([apply(), apply(), apply()]);
		expect(results.filter((r) => r.body.success)).toHaveLength(1);
		expect((await admin("GET", `/apps/${app.appid}/stats`)).body.totals).toMatchObject({ signups: 2, referredsignups: 1 });
	});

	it("answers a year of days in one request", async () => {
		const app = await createApp();
		await register(app, { email: "y@x.com" });
		const to = today();
		const from = new Date(Date.parse(`${to}T00:00:00Z`) - 364 * 86_400_000).toISOString().slice(0, 10);
		const res = await admin("GET", `/apps/${app.appid}/stats?from=${from}&to=${to}`);
		expect(res.status).toBe(200);
		expect(res.body.days).toHaveLength(365);
		expect(res.body.totals.signups).toBe(1);
	});

	it("lists no reward of another app", async () => {
		const app = await createApp();
		const other = await createApp();
		const theirs = await register(other, { email: "t@x.com" });
		const friend = await register(other, { email: "tf@x.com", referrercode: theirs.referralcode });
		await event(other, friend.userkey);
		// The referrer's new reward is projected by its friend's ledger, which keeps its records (ledger/carried-records.ts).
		for (const userkey of [theirs.userkey, friend.userkey]) await flush(other, userkey);
		expect((await admin("GET", `/apps/${other.appid}/rewards?userkey=${theirs.userkey}`)).body.rewards).toHaveLength(1);
		expect((await admin("GET", `/apps/${app.appid}/rewards?userkey=${theirs.userkey}`)).body.rewards).toEqual([]);
	});
});
