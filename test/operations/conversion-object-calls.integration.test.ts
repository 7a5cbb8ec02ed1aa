import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { createApp } from "../support/api";
import { countObjectCalls, type ObjectCall } from "../support/object-calls";

/**
 * The object calls one conversion makes on its request path (issue 49, "one
 * call fewer"; docs/scaling.md): every call a ledger or an event gate
 * receives, from the Worker or from another ledger, counted where it
 * arrives, so a call moved from the Worker into a ledger is still counted.
 * Under `wrangler dev` one workerd thread runs everything, so each call and
 * each write transaction it opens is CPU a conversion pays (bench/README.md,
 * "Floors"). The consumer's acknowledgements and the alarms are background
 * work, priced by the bench, not counted here.
 */

let counter: ReturnType<typeof countObjectCalls>;
beforeEach(() => {
	counter = countObjectCalls();
});
afterEach(() => counter.stop());

/** The calls as `method@whose` (friend, referrer, gate), in the order they arrived. */
function named(calls: ObjectCall[], appid: string, friend: string, referrer: string): string[] {
	const whose = (c: ObjectCall) =>
		c.kind === "gate" ? "gate" : c.name === `${appid}:${friend}` ? "friend" : c.name === `${appid}:${referrer}` ? "referrer" : c.name;
	return calls.map((c) => `${c.method}@${whose(c)}`);
}

const rule = (rewardusertype: string) => ({ rewardusertype, eventname: "Purchase", reward: 5, rewardunit: "USD" });

async function referral(rules: ReturnType<typeof rule>[]) {
	const app = await createApp({ rewardrules: rules });
	const referrer = (await app.api("register", { email: "calls-ref@x.com" })).body;
	const friend = (await app.api("register", { email: "calls-friend@x.com", referrercode: referrer.referralcode })).body;
	let customid = 0;
	/** One conversion of the friend; answers the calls it made (`named`). */
	const convert = async () => {
		counter.take();
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid: `calls-${++customid}`,
			growthhack: "SaaS_Referrals",
		});
		expect(res.status).toBe(200);
		return named(counter.take(), app.appid, friend.userkey, referrer.userkey);
	};
	return { ...app, referrer, friend, convert };
}

describe("the object calls of one conversion", () => {
	it("rewarding both sides: 5 calls the first time too (6 before: the friend's profile told apart), 5 after", async () => {
		const { convert, appid, friend, referrer } = await referral([rule("Friend"), rule("Referrer")]);
		const first = await convert();
		const steady = await convert();
		// The Worker reads the two profiles, claims the gate, and calls the friend's ledger, which calls the referrer's.
		const path = ["profile@friend", "profile@referrer", "claim@gate", "grantWithReferrer@friend", "grant@referrer"];
		expect(first).toEqual(path);
		expect(steady).toEqual(path);
		expect(await ledgerFor(env, appid, friend.userkey).listRewards()).toHaveLength(2);
		expect(await ledgerFor(env, appid, referrer.userkey).listRewards()).toHaveLength(2);
		// The friend's profile keeps that its referrer was told, written with the friend's first grant.
		expect((await ledgerFor(env, appid, friend.userkey).profile()).profile?.convertedTold).toBe(true);
	});

	it("rewarding the friend only: 5 calls the first time (6 before), the referrer told by the friend's ledger; 4 after", async () => {
		const { convert, api, appid, friend, referrer } = await referral([rule("Friend")]);
		const first = await convert();
		const steady = await convert();
		expect(first).toEqual(["profile@friend", "profile@referrer", "claim@gate", "grantWithReferrer@friend", "rememberFriends@referrer"]);
		expect(steady).toEqual(["profile@friend", "profile@referrer", "claim@gate", "grant@friend"]);
		const page = await api("getfriendsandrewards", { userkey: referrer.userkey });
		expect(page.body.friends).toEqual([expect.objectContaining({ userkey: friend.userkey, status: "Converted" })]);
		expect((await ledgerFor(env, appid, friend.userkey).profile()).profile?.convertedTold).toBe(true);
	});

	it("rewarding the referrer only: its ledger grants alone, and the friend's keeps that it was told (5 the first time, 4 after)", async () => {
		const { convert, appid, friend, referrer } = await referral([rule("Referrer")]);
		const first = await convert();
		const steady = await convert();
		expect(first).toEqual(["profile@friend", "profile@referrer", "claim@gate", "grant@referrer", "changeProfile@friend"]);
		expect(steady).toEqual(["profile@friend", "profile@referrer", "claim@gate", "grant@referrer"]);
		expect(await ledgerFor(env, appid, referrer.userkey).listRewards()).toHaveLength(2);
		expect((await ledgerFor(env, appid, friend.userkey).profile()).profile?.convertedTold).toBe(true);
	});
});
