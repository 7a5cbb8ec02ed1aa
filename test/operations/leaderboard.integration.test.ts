import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { leaderboardCounters } from "../../src/db/leaderboard";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, type createApp } from "../support/api";
import { expectBoardCountersAgree } from "../support/board-counters";
import { createOneDatabaseApp } from "../support/layout";

type App = Awaited<ReturnType<typeof createApp>>;
type Board = {
	success: boolean;
	leaderboard: { rank: number; userkey: string; displayname: string; friendsconverted: number; earned: number }[];
	user?: { rank: number | null; friendsconverted: number };
	errorcode?: string;
};

async function program(app: Record<string, unknown> = {}) {
	return createOneDatabaseApp(
		{
			campaignstartdate: "2020-01-01T00:00:00Z",
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		},
		app,
	);
}

async function referrer(app: App, name?: string) {
	const body: Record<string, unknown> = { email: `r-${crypto.randomUUID()}@x.com` };
	if (name) body.name = name;
	return (await app.api<{ userkey: string; referralcode: string }>("register", body)).body;
}

async function friendOf(app: App, ref: { referralcode: string }) {
	return (await app.api<{ userkey: string }>("register", { email: `f-${crypto.randomUUID()}@x.com`, referrercode: ref.referralcode })).body;
}

let nextCustomId = 1;
async function purchase(app: App, friend: { userkey: string }, value = "10") {
	const customid = `lb-${nextCustomId++}`;
	const res = await app.api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Purchase",
		customid,
		growthhack: "SaaS_Referrals",
		transactionvalue: value,
	});
	expect(res.status).toBe(200);
	return customid;
}

/** The levels and tie slices the triggers keep agree with the counters (test/support/board-counters.ts). */
const expectLevelsAgree = (app: App) => expectBoardCountersAgree(app.appid);

const flush = (app: App, ...users: { userkey: string }[]) => Promise.all(users.map((u) => ledgerFor(env, app.appid, u.userkey).flush()));
const board = (app: App, body: Record<string, unknown> = {}) => app.api<Board>("getleaderboard", body);
const ranks = (b: Board) => b.leaderboard.map((e) => [e.userkey, e.friendsconverted]);

describe("getleaderboard", () => {
	afterEach(() => vi.useRealTimers());

	it("ranks by distinct friends, ties to who reached the count first, with display names and the user's rank", async () => {
		const app = await program();
		const ann = await referrer(app, "Ann Marie Lee");
		const bob = await referrer(app, "bob");
		const anon = await referrer(app);
		const lone = await referrer(app, "Lone Wolf");
		// anon reaches 2 first, then ann; bob 1; a friend's second purchase does not count again.
		const [a1, a2, n1, n2, b1] = [
			await friendOf(app, ann),
			await friendOf(app, ann),
			await friendOf(app, anon),
			await friendOf(app, anon),
			await friendOf(app, bob),
		];
		for (const f of [n1, n2, a1, a1, a2, b1]) {
			await purchase(app, f);
			// Distinct instants: the tie-break compares when each count was reached.
			await new Promise((r) => setTimeout(r, 5));
		}
		await flush(app, ann, bob, anon);

		const all = (await board(app, { userkey: bob.userkey })).body;
		expect(all.success).toBe(true);
		expect(ranks(all)).toEqual([
			[anon.userkey, 2],
			[ann.userkey, 2],
			[bob.userkey, 1],
		]);
		expect(all.leaderboard.map((e) => [e.rank, e.displayname, e.earned])).toEqual([
			[1, "A referrer", 10],
			[2, "Ann L.", 15],
			[3, "bob", 5],
		]);
		expect(all.user).toEqual({ rank: 3, friendsconverted: 1 });
		// A referrer without converted friends is not on the board and has no rank.
		expect((await board(app, { userkey: lone.userkey })).body.user).toEqual({ rank: null, friendsconverted: 0 });
		const top = (await board(app, { limit: 2, period: "all", campaignid: String(app.campaignid) })).body;
		expect(ranks(top)).toEqual([
			[anon.userkey, 2],
			[ann.userkey, 2],
		]);
		expect(top.user).toBeUndefined();
	});

	it("refuses bad input with a named field and unknown ids with 404", async () => {
		const app = await program();
		for (const body of [{ limit: 0 }, { limit: 101 }, { limit: "x" }, { period: "year" }]) {
			const res = await board(app, body);
			expect(res.status).toBe(400);
			expect(res.body.errorcode).toBe("validation_failed");
		}
		expect((await board(app, { campaignid: "999999999" })).body.errorcode).toBe("campaign_not_found");
		expect((await board(app, { userkey: "nobody" })).body.errorcode).toBe("user_not_found");
	});

	it("reads the bucket of the current week and month in the app's time zone (boundaries: test/domain/leaderboard.unit.test.ts)", async () => {
		const app = await program();
		expect((await admin("PATCH", `/apps/${app.appid}`, { timezone: "Pacific/Kiritimati" })).status).toBe(200);
		const ref = await referrer(app, "Zoe Kiri");
		for (const f of [await friendOf(app, ref), await friendOf(app, ref)]) await purchase(app, f);
		await flush(app, ref);
		// The rewards are dated by the ledger's clock (now); the board's bucket by the caller's now, faked below.
		const now = Date.now();
		const count = async (period: string) => (await board(app, { period, userkey: ref.userkey })).body.user?.friendsconverted;
		expect([await count("week"), await count("month"), await count("all")]).toEqual([2, 2, 2]);
		vi.useFakeTimers({ toFake: ["Date"] });
		vi.setSystemTime(now + 7 * 86_400_000);
		expect([await count("week"), await count("all")]).toEqual([0, 2]);
		vi.setSystemTime(now + 32 * 86_400_000);
		expect([await count("week"), await count("month"), await count("all")]).toEqual([0, 0, 2]);
		expect((await board(app, { period: "month" })).body.leaderboard).toEqual([]);
		vi.setSystemTime(now - 32 * 86_400_000);
		expect([await count("week"), await count("month")]).toEqual([0, 0]);
	});

	it("never shows an erased referrer, and those behind move up", async () => {
		const app = await program();
		const ann = await referrer(app, "Ann Lee");
		const bob = await referrer(app, "Bob Stone");
		const [a1, a2, b1] = [await friendOf(app, ann), await friendOf(app, ann), await friendOf(app, bob)];
		for (const f of [a1, a2, b1]) await purchase(app, f);
		await flush(app, ann, bob);
		expect(ranks((await board(app)).body)).toEqual([
			[ann.userkey, 2],
			[bob.userkey, 1],
		]);
		expect((await admin("DELETE", `/apps/${app.appid}/users/${ann.userkey}`)).status).toBe(200);
		await flush(app, ann, bob);
		const after = (await board(app, { userkey: bob.userkey })).body;
		expect(ranks(after)).toEqual([[bob.userkey, 1]]);
		expect(after.user).toEqual({ rank: 1, friendsconverted: 1 });
		expect((await board(app, { userkey: ann.userkey })).body.errorcode).toBe("user_erased");
	});

	it("counts no erased referrer ahead of anyone, also when its rewards reach the board after the erasure", async () => {
		const app = await program();
		const ann = await referrer(app, "Ann Lee");
		const bob = await referrer(app, "Bob Stone");
		const cat = await referrer(app, "Cat Wu");
		const [a1, a2, b1, c1] = [await friendOf(app, ann), await friendOf(app, ann), await friendOf(app, bob), await friendOf(app, cat)];
		for (const f of [b1, c1]) await purchase(app, f);
		await flush(app, bob, cat);
		// Ann's rewards are granted but not yet on the board when she is erased: her ledger's flush comes after.
		for (const f of [a1, a2]) await purchase(app, f);
		expect((await admin("DELETE", `/apps/${app.appid}/users/${ann.userkey}`)).status).toBe(200);
		await flush(app, ann);
		for (const period of ["all", "month", "week"]) {
			const after = (await board(app, { period, userkey: cat.userkey })).body;
			expect(ranks(after)).toEqual([
				[bob.userkey, 1],
				[cat.userkey, 1],
			]);
			expect(after.user).toEqual({ rank: 2, friendsconverted: 1 });
		}
		// A flush of Ann's that was under way at the erasure and lands after it adds no counter back (the counters' guard).
		const late = {
			seq: 99,
			campaignid: app.campaignid,
			usertype: "Referrer",
			friend_userkey: `late-${crypto.randomUUID()}`,
			amount: 500,
			reversed: 0,
		};
		const row = { ...late, status: "Approved", version: 1, created_at: "2021-01-04T00:00:00.000Z" };
		await env.DB.batch(leaderboardCounters(env.DB, app.appid, ann.userkey, "UTC", row));
		expect((await board(app, { userkey: cat.userkey })).body.user).toEqual({ rank: 2, friendsconverted: 1 });
		await expectLevelsAgree(app);
	});

	it("a friend already counted: a new reward moves only `earned`, one row written per bucket, the rank index untouched", async () => {
		const app = await program();
		const ann = await referrer(app, "Ann Lee");
		const a1 = await friendOf(app, ann);
		await purchase(app, a1);
		await flush(app, ann);
		// Ann's second reward for the same friend, as her ledger would project it (seq 2, not yet in D1).
		const second = {
			seq: 2,
			campaignid: app.campaignid,
			usertype: "Referrer",
			friend_userkey: a1.userkey,
			amount: 500,
			reversed: 0,
			status: "Approved",
			version: 1,
			created_at: new Date().toISOString(),
		};
		const rank = () =>
			env.DB.prepare("SELECT bucket, friends, reached_at FROM leaderboard_counts WHERE appid = ? ORDER BY bucket").bind(app.appid).all();
		const before = (await rank()).results;
		const results = await env.DB.batch(leaderboardCounters(env.DB, app.appid, ann.userkey, "UTC", second));
		// Three buckets (all time, month, week): an UPDATE of earned alone in each, 1 row (the upsert rewrote the rank index: 3-4).
		expect(results.reduce((n, r) => n + r.meta.rows_written, 0)).toBe(3);
		expect((await rank()).results).toEqual(before);
		const after = (await board(app, { userkey: ann.userkey })).body;
		expect(after.user).toEqual({ rank: 1, friendsconverted: 1 });
		expect(after.leaderboard[0]?.earned).toBe(10);
		await expectLevelsAgree(app);
	});

	it("a friend whose only rewarded event is fully reversed leaves the board; a partial refund or another event keeps them", async () => {
		const app = await program();
		const ann = await referrer(app, "Ann Lee");
		const [a1, a2] = [await friendOf(app, ann), await friendOf(app, ann)];
		const only = await purchase(app, a1);
		const first = await purchase(app, a2);
		const kept = await purchase(app, a2);
		await flush(app, ann);
		expect((await board(app, { userkey: ann.userkey })).body.user).toEqual({ rank: 1, friendsconverted: 2 });

		expect((await app.api("reverseconversionevent", { customid: first, reason: "refunded" })).status).toBe(200);
		expect((await app.api("reverseconversionevent", { customid: only, refundvalue: "4", reason: "partial" })).status).toBe(200);
		await flush(app, ann);
		// a2 keeps a live event; a1's fixed reward stays whole under a partial refund (docs/rewards.md): both still count.
		const partly = (await board(app, { userkey: ann.userkey })).body;
		expect(partly.user).toEqual({ rank: 1, friendsconverted: 2 });
		expect(partly.leaderboard[0]?.earned).toBe(10);

		expect((await app.api("reverseconversionevent", { customid: only, reason: "refunded" })).status).toBe(200);
		await flush(app, ann);
		const after = (await board(app, { userkey: ann.userkey })).body;
		expect(after.user).toEqual({ rank: 1, friendsconverted: 1 });
		expect(after.leaderboard[0]?.earned).toBe(5);
		// Reversing the last one: the referrer leaves the board.
		const last = await purchase(app, a1);
		await flush(app, ann);
		expect((await board(app, { userkey: ann.userkey })).body.user?.friendsconverted).toBe(2);
		await expectLevelsAgree(app);
		expect((await app.api("reverseconversionevent", { customid: last, reason: "refunded" })).status).toBe(200);
		expect((await app.api("reverseconversionevent", { customid: kept, reason: "refunded" })).status).toBe(200);
		await flush(app, ann);
		const gone = (await board(app, { userkey: ann.userkey })).body;
		expect(gone.leaderboard).toEqual([]);
		expect(gone.user).toEqual({ rank: null, friendsconverted: 0 });
	});
});
