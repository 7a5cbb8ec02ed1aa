import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newUserKey } from "../../src/domain/ids";
import type { UserLedger } from "../../src/ledger/user-ledger";
import { freshLedger, grantOf } from "./support";

describe("UserLedger.grant", () => {
	it("creates a reward with id <userkey>-<seq>, rounded amount, public fields and balance", async () => {
		const { appid, userkey, stub } = freshLedger();
		const grant = grantOf({
			amount: 10.005,
			comment: "welcome",
			friend: { userkey: newUserKey(), email: "f@x.io", name: "Fe", profileimage: "https://x.io/p.png" },
		});
		const result = await stub.grant(appid, userkey, [grant]);
		expect(result.skipped).toEqual([]);
		expect(result.rewards).toHaveLength(1);
		const reward = result.rewards[0]!;
		expect(reward).toMatchObject({
			created: true,
			rewarddtlid: `${userkey}-1`,
			rewardstatus: "Approved",
			comment: "welcome",
			reward: "10.01",
			amount: 10.01,
			redeemed: 0,
			rewardunit: "USD",
			rewardtype: "InstoreCredits",
			usertype: "Referrer",
			campaignid: "1",
			growthhack: "SaaS_Referrals",
			friendemail: "f@x.io",
			friendname: "Fe",
			friendprofileimage: "https://x.io/p.png",
			coupon: "",
			key: grant.key,
			friendUserkey: grant.friend.userkey,
			version: 1,
		});
		expect(reward.rewardedon).toMatch(/^\d{1,2}-[A-Z][a-z]{2}-\d{4}$/);
		expect(await stub.getReward(reward.rewarddtlid)).toMatchObject({ rewarddtlid: reward.rewarddtlid, amount: 10.01 });
		const [usd] = await stub.balance({});
		expect(usd).toMatchObject({ rewardunit: "USD", total: 10.01, approved: 10.01, pending: 0, claimed: 0 });
	});

	it("is idempotent by key, also within one call", async () => {
		const { appid, userkey, stub } = freshLedger();
		const grant = grantOf();
		const first = await stub.grant(appid, userkey, [grant, grant]);
		expect(first.rewards.map((r) => r.created)).toEqual([true, false]);
		const again = await stub.grant(appid, userkey, [{ ...grant, amount: 99 }]);
		expect(again.rewards[0]).toMatchObject({ created: false, rewarddtlid: first.rewards[0]!.rewarddtlid, amount: 10 });
		expect(await stub.listRewards()).toHaveLength(1);
	});

	it("a ledger's first grant, which creates it, reads no erasure, reward by key or recorded refund; its next grant does", async () => {
		const { appid, userkey, stub } = freshLedger();
		// Statements the object runs while `fn` runs (the ledger runs in this isolate).
		const statementsOf = (fn: (ledger: UserLedger) => unknown) =>
			runInDurableObject(stub, (ledger, state) => {
				const proto = Object.getPrototypeOf(state.storage.sql) as { exec: (...args: unknown[]) => unknown };
				const original = proto.exec;
				const seen: string[] = [];
				proto.exec = function (this: unknown, ...args: unknown[]) {
					seen.push(String(args[0]));
					return original.apply(this, args);
				};
				try {
					fn(ledger);
				} finally {
					proto.exec = original;
				}
				return seen;
			});
		const reads = (statements: string[]) =>
			statements.filter((s) =>
				/key = 'erased_at'|FROM rewards WHERE ruleid = \? AND friend_userkey = \? AND customid = \? AND key = \?|FROM refunds WHERE customid/.test(
					s,
				),
			).length;
		const first = await statementsOf((ledger) => ledger.grant(appid, userkey, [grantOf()]));
		expect(reads(first)).toBe(0);
		const second = await statementsOf((ledger) => ledger.grant(appid, userkey, [grantOf()]));
		expect(reads(second)).toBe(3);
		expect(await stub.listRewards()).toHaveLength(2);
	});

	it("20 concurrent identical grants create exactly one reward", async () => {
		const { appid, userkey, stub } = freshLedger();
		const grant = grantOf({ amount: 7 });
		const results = await Promise.all(Array.from({ length: 20 }, () => stub.grant(appid, userkey, [grant])));
		expect(results.filter((r) => r.rewards[0]!.created)).toHaveLength(1);
		expect(new Set(results.map((r) => r.rewards[0]!.rewarddtlid)).size).toBe(1);
		expect(await stub.listRewards()).toHaveLength(1);
		expect((await stub.balance({}))[0]).toMatchObject({ total: 7, approved: 7 });
	});

	it("enforces rewardfrequency per rule and friend; 0 is unlimited", async () => {
		const { appid, userkey, stub } = freshLedger();
		const friendA = { userkey: newUserKey(), email: null, name: null, profileimage: null };
		const friendB = { ...friendA, userkey: newUserKey() };
		// A grant's key names its event and rule (rules.ts), as the reward is looked up by both (ledger schema step 10).
		const limited = (n: number, friend = friendA, ruleid = 7) =>
			grantOf({ key: `e${n}:${ruleid}`, customid: `e${n}`, ruleid, rewardfrequency: 2, friend });
		const r = await stub.grant(appid, userkey, [limited(1), limited(2), limited(3)]);
		expect(r.rewards.map((x) => x.key)).toEqual(["e1:7", "e2:7"]);
		expect(r.skipped).toEqual([{ key: "e3:7", reason: "frequency_limit" }]);
		// Another friend, another rule: their own counts.
		const other = await stub.grant(appid, userkey, [limited(4, friendB), limited(5, friendA, 8)]);
		expect(other.rewards.map((x) => x.created)).toEqual([true, true]);
		// A rejected reward still counts: rejecting and repeating the event must not re-earn it.
		await stub.changeStatuses([{ rewarddtlid: r.rewards[0]!.rewarddtlid, status: "Rejected", message: null }]);
		expect((await stub.grant(appid, userkey, [limited(6)])).skipped).toHaveLength(1);
		// A known key is returned even when the limit is reached.
		expect((await stub.grant(appid, userkey, [limited(1)])).rewards[0]!.created).toBe(false);
		const unlimited = Array.from({ length: 5 }, (_, i) =>
			grantOf({ key: `u${i}:9`, customid: `u${i}`, ruleid: 9, rewardfrequency: 0, friend: friendA }),
		);
		expect((await stub.grant(appid, userkey, unlimited)).rewards.every((x) => x.created)).toBe(true);
	});

	it("keeps status, hold and comment as given; Suspicious never holds", async () => {
		const { appid, userkey, stub } = freshLedger();
		const hold = new Date(Date.now() + 3_600_000).toISOString();
		const { rewards } = await stub.grant(appid, userkey, [
			grantOf({ status: "UnderReview", holdUntil: hold }),
			grantOf({ status: "Suspicious", holdUntil: hold, comment: "velocity check" }),
		]);
		expect(rewards[0]).toMatchObject({ rewardstatus: "UnderReview", holdUntil: hold });
		expect(rewards[1]).toMatchObject({ rewardstatus: "Suspicious", holdUntil: null, comment: "velocity check" });
		expect((await stub.balance({}))[0]).toMatchObject({ total: 20, pending: 20, approved: 0 });
	});

	it("refuses to be used for another identity (a routing bug)", async () => {
		const { appid, userkey, stub } = freshLedger();
		await stub.grant(appid, userkey, [grantOf()]);
		// Called in the object itself: an exception thrown across RPC is also reported as uncaught by workerd.
		await runInDurableObject(stub, (ledger) => {
			expect(() => ledger.grant(appid, newUserKey(), [grantOf()])).toThrow(/called for/);
			expect(() => ledger.grant(`${appid}x`, userkey, [grantOf()])).toThrow(/called for/);
		});
		expect(await stub.listRewards()).toHaveLength(1);
	});

	it("lists rewards per friend, newest first with a total, and finds only its own ids", async () => {
		const { appid, userkey, stub } = freshLedger();
		const f1 = { userkey: newUserKey(), email: null, name: "One", profileimage: null };
		const f2 = { ...f1, userkey: newUserKey(), name: "Two" };
		await stub.grant(appid, userkey, [grantOf({ friend: f1 }), grantOf({ friend: f2 }), grantOf({ friend: f1, eventname: "Transaction" })]);
		const byFriend = await stub.rewardsForFriends([f1.userkey, f2.userkey, "unknown"]);
		expect(byFriend[f1.userkey]!.rewards.map((r) => r.eventname)).toEqual(["Transaction", "Signup"]);
		expect(byFriend[f1.userkey]!.total).toBe(2);
		expect(byFriend[f2.userkey]!.rewards.map((r) => r.friendname)).toEqual(["Two"]);
		expect(byFriend.unknown).toEqual({ rewards: [], total: 0 });
		const capped = await stub.rewardsForFriends([f1.userkey], 1);
		expect(capped[f1.userkey]).toMatchObject({ rewards: [{ eventname: "Transaction" }], total: 2 });
		expect(await stub.getReward(`${userkey}-99`)).toBeNull();
		expect(await stub.getReward(`${newUserKey()}-1`)).toBeNull();
		expect(await stub.getReward("nonsense")).toBeNull();
	});

	it("a friends page shows every field of a reward as its full row does (the page selects only the columns the view reads)", async () => {
		const { appid, userkey, stub } = freshLedger();
		const friend = { userkey: newUserKey(), email: "f@example.com", name: "Fay", profileimage: "https://example.com/f.png" };
		await stub.grant(appid, userkey, [
			grantOf({ friend, status: "Suspicious", comment: "looked twice", fraudsignals: ["email_alias"], rewardtype: "Coupon" }),
		]);
		// Every column the view shows set to something other than its default, so a column the page failed to select shows.
		await runInDurableObject(stub, (_l, state) =>
			state.storage.sql.exec(
				`UPDATE rewards SET status = 'Rewarded', coupon = 'C-1', couponname = 'Ten off', coupondetails = 'Any order', couponimage = 'https://example.com/c.png',
				 payoutid = 'po_1', rewarded_at = '2026-01-02T00:00:00.000Z', reversed = 250 WHERE seq = 1`,
			),
		);
		const page = await stub.rewardsForFriends([friend.userkey]);
		const shown = page[friend.userkey]!.rewards[0]!;
		const full = (await stub.getReward(`${userkey}-1`))!;
		for (const [field, value] of Object.entries(shown)) expect([field, value]).toEqual([field, full[field as keyof typeof full]]);
		expect(shown).toMatchObject({ comment: "looked twice", coupon: "C-1", payoutid: "po_1", rewardedon: "2-Jan-2026", reward: "7.5" });
		expect(shown.fraudsignals).toEqual(["email_alias"]);
	});

	it("a fresh ledger answers empty reads", async () => {
		const { stub } = freshLedger();
		expect(await stub.balance({})).toEqual([]);
		expect(await stub.listRewards()).toEqual([]);
		expect(await stub.getReward("x")).toBeNull();
	});
});
