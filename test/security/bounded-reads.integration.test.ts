import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { grantOf } from "../ledger/support";
import { admin, createApp } from "../support/api";

describe("bounded reads", () => {
	it("a friend with 1,000 rewards: the page of size 1 lists the newest 100, with the total, under 64 KB", async () => {
		const { api, appid } = await createApp();
		const referrer = (await api("register", { email: "ref@example.com", name: "Rita" })).body;
		const friend = (await api("register", { email: "fred@example.com", referrercode: referrer.referralcode })).body;
		const ledger = ledgerFor(env, appid, referrer.userkey);
		const asFriend = { userkey: friend.userkey, email: "fred@example.com", name: "Fred", profileimage: null };
		for (let batch = 0; batch < 4; batch++) {
			const grants = Array.from({ length: 250 }, (_, i) => grantOf({ friend: asFriend, customid: `${batch * 250 + i + 1}` }));
			await ledger.grant(appid, referrer.userkey, grants);
		}
		const res = await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 1, pagesize: 1 });
		expect(res.status).toBe(200);
		expect(new TextEncoder().encode(JSON.stringify(res.body)).byteLength).toBeLessThan(64 * 1024);
		const [entry] = res.body.friends;
		expect(entry.earnedrewardstotal).toBe(1000);
		expect(entry.earnedrewards).toHaveLength(100);
		const seqs = entry.earnedrewards.map((r: { rewarddtlid: string }) => Number(r.rewarddtlid.split("-")[1]));
		expect(seqs[0]).toBe(1000);
		expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
		expect(await ledger.listRewards(10, 995)).toHaveLength(5);
	});

	it("a pageindex far beyond the last page is an empty page; beyond the bound it is refused", async () => {
		const { api } = await createApp();
		const referrer = (await api("register", { email: "ref@example.com" })).body;
		await api("register", { email: "f@example.com", referrercode: referrer.referralcode });
		const far = await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 9_000_000, pagesize: 500 });
		expect(far.body).toMatchObject({ success: true, friends: [], totalfriends: 1 });
		expect((await api("getfriendsandrewards", { userkey: referrer.userkey, pageindex: 1e15 })).status).toBe(400);
	});

	it("admin lists are paged with a cursor", async () => {
		const a = await createApp();
		await admin("POST", `/apps/${a.appid}/campaigns`, { campaignname: "Second" });
		await admin("POST", `/apps/${a.appid}/campaigns`, { campaignname: "Third" });
		const first = await admin("GET", `/apps/${a.appid}/campaigns?limit=2`);
		expect(first.body.campaigns).toHaveLength(2);
		const rest = await admin("GET", `/apps/${a.appid}/campaigns?limit=2&cursor=${first.body.nextcursor}`);
		expect(rest.body.campaigns.map((c: { campaignname: string }) => c.campaignname)).toEqual(["Third"]);
		expect(rest.body.nextcursor).toBeNull();

		await createApp();
		// Three pages of one, then the rest 200 at a time (a test never assumes it has the database to itself: other tests' apps may
		// come first): each page within its limit, no app twice, `a` met on the way, and the walk ends.
		const seen: string[] = [];
		let cursor: string | null = "";
		for (let page = 0; cursor !== null && page < 1_000; page++) {
			const limit = page < 3 ? 1 : 200;
			const res: { body: any } = await admin("GET", `/apps?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
			expect(res.body.apps.length).toBeLessThanOrEqual(limit);
			for (const app of res.body.apps) seen.push(app.appid);
			cursor = res.body.nextcursor;
		}
		expect(cursor).toBeNull();
		expect(seen).toContain(a.appid);
		expect(new Set(seen).size).toBe(seen.length);
		expect((await admin("GET", "/apps?limit=0")).status).toBe(400);
	});
});
