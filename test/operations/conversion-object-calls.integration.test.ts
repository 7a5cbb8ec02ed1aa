import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SentEntry } from "../../src/ledger/outbox-entries";
import { ledgerFor } from "../../src/ledger/stub";
import { UserLedger } from "../../src/ledger/user-ledger";
import { createApp } from "../support/api";
import { projectionRows } from "../support/layout";
import { countObjectCalls, type ObjectCall } from "../support/object-calls";
import { until } from "../support/until";

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

describe("the background work of one conversion rewarding both sides", () => {
	const acknowledge = Object.getOwnPropertyDescriptor(UserLedger.prototype, "projectionWritten");
	afterEach(() => {
		if (acknowledge) Object.defineProperty(UserLedger.prototype, "projectionWritten", acknowledge);
	});

	it("one acknowledgement, to the friend's ledger; the referrer's ledger gets none and writes no alarm (issue 49)", async () => {
		const { convert, appid, friend, referrer } = await referral([rule("Friend"), rule("Referrer")]);
		const settled = async (n: number) => {
			await until(
				"every reward projected",
				() =>
					projectionRows<{ n: number }>("SELECT COUNT(*) AS n FROM rewards WHERE appid = ?", appid).then((r) =>
						r.reduce((sum, d) => sum + d.n, 0),
					),
				(count) => count === n,
			);
			for (const userkey of [friend.userkey, referrer.userkey])
				await until(
					"the outbox emptied",
					() =>
						runInDurableObject(ledgerFor(env, appid, userkey), (_l, state) => state.storage.sql.exec("SELECT ref FROM outbox").toArray()),
					(rows) => rows.length === 0,
				);
		};
		await convert();
		await settled(2);
		// The acknowledgements each ledger receives from the projection's consumer, with what they name.
		const acks: { name: string; acks: number }[] = [];
		const original = acknowledge?.value as (this: UserLedger, acks: SentEntry[]) => void;
		Object.defineProperty(UserLedger.prototype, "projectionWritten", {
			...acknowledge,
			value: function (this: UserLedger & { ctx: DurableObjectState }, sent: SentEntry[]) {
				acks.push({ name: this.ctx.id.name ?? "", acks: sent.length });
				return original.call(this, sent);
			},
		});
		// The referrer's stored alarm, watched from its storage: a write of it is a set or a delete.
		const alarms = await runInDurableObject(ledgerFor(env, appid, referrer.userkey), (ledger) => {
			const seen = { writes: 0 };
			// The very storage object its flush schedule arms the alarm on (user-ledger.ts, without the bench's flag).
			const storage = Reflect.get(Reflect.get(ledger, "schedule"), "storage") as DurableObjectStorage;
			const proto = Object.getPrototypeOf(storage) as DurableObjectStorage;
			for (const method of ["setAlarm", "deleteAlarm"] as const) {
				const real = proto[method];
				Object.defineProperty(storage, method, {
					configurable: true,
					value: (...args: Parameters<typeof real>) => {
						seen.writes++;
						return Reflect.apply(real, storage, args);
					},
				});
			}
			return seen;
		});
		await convert();
		await settled(4);
		const names = acks.map((a) =>
			a.name === `${appid}:${friend.userkey}` ? "friend" : a.name === `${appid}:${referrer.userkey}` ? "referrer" : a.name,
		);
		// Before: one each, the referrer's removing its own projection entry (a call, a write transaction, an alarm write).
		expect(names).toEqual(["friend"]);
		expect(alarms.writes).toBe(0);
	});
});
