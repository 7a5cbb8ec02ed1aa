import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";

let nextCustomId = 1;

/** Counts the statements a ledger runs on its SQLite while `work` runs (SqlStorage's prototype, so every ledger is seen). */
async function countLedgerStatements(work: () => Promise<unknown>): Promise<number> {
	let proto: { exec: (...args: unknown[]) => unknown } | undefined;
	await runInDurableObject(ledgerFor(env, "count", "probe"), async (_instance, state) => {
		proto = Object.getPrototypeOf(state.storage.sql);
	});
	if (!proto) throw new Error("no SqlStorage prototype");
	const original = proto.exec;
	let n = 0;
	proto.exec = function (this: unknown, ...args: unknown[]) {
		n++;
		return original.apply(this, args);
	};
	try {
		await work();
	} finally {
		proto.exec = original;
	}
	return n;
}

describe("getfriendsandrewards (issue 19)", () => {
	it("reads a page's rewards in one ledger statement, whatever the page size; the newest `limit` per friend and the count", async () => {
		const app = await createApp({
			rewardrules: [
				{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 1, rewardunit: "USD" },
			],
		});
		const referrer = (await app.api("register", { email: "ref@x.com" })).body;
		const friends: string[] = [];
		for (let i = 0; i < 12; i++) {
			const friend = (await app.api("register", { email: `f${i}@x.com`, referrercode: referrer.referralcode })).body;
			friends.push(friend.userkey);
			await app.api("registerconversionevent", {
				userkey: friend.userkey,
				eventname: "Signup",
				customid: String(nextCustomId++),
				growthhack: "g",
			});
		}
		// The first friend earned the referrer three rewards.
		for (const _ of [1, 2]) {
			await app.api("registerconversionevent", {
				userkey: friends[0],
				eventname: "Purchase",
				customid: String(nextCustomId++),
				growthhack: "g",
			});
		}
		const ledger = ledgerFor(env, app.appid, referrer.userkey);
		await ledger.listRewards();

		let page: Record<string, { rewards: { eventname: string }[]; total: number }> = {};
		const statements = await countLedgerStatements(async () => {
			page = await ledger.rewardsForFriends([...friends, "unosuchfriend0000000"], 2);
		});
		expect(statements).toBe(1);
		expect(Object.keys(page)).toHaveLength(13);
		expect(page.unosuchfriend0000000).toEqual({ rewards: [], total: 0 });
		const first = page[friends[0] ?? ""];
		expect(first?.total).toBe(3);
		expect(first?.rewards.map((r) => r.eventname)).toEqual(["Purchase", "Purchase"]);
		expect(page[friends[5] ?? ""]).toMatchObject({ total: 1, rewards: [expect.objectContaining({ eventname: "Signup" })] });

		// From the referrer's ledger (issue 49 piece 4): its friends' state, its erasure mark, the page, the page's rewards.
		const all = await countLedgerStatements(() => app.api("getfriendsandrewards", { userkey: referrer.userkey }));
		expect(all).toBe(4);
		const small = await countLedgerStatements(() => app.api("getfriendsandrewards", { userkey: referrer.userkey, pagesize: 3 }));
		expect(small).toBe(4);
	});
});
