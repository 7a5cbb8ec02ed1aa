import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { ledgerFor } from "../src/ledger/stub";
import { createApp } from "./support/api";

const counts = new Map<string, number>();
let on = false;
it("counts", async () => {
	await runInDurableObject(ledgerFor(env, "p", "q"), async (_i, state) => {
		const proto = Object.getPrototypeOf(state.storage.sql);
		const orig = proto.exec;
		proto.exec = function (this: unknown, ...args: unknown[]) {
			if (on) counts.set(String(args[0]).replace(/\s+/g, " ").slice(0, 110), (counts.get(String(args[0]).replace(/\s+/g, " ").slice(0, 110)) ?? 0) + 1);
			return orig.apply(this, args);
		};
	});
	const app = await createApp({
		velocitythreshold: 0,
		rewardrules: [
			{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
			{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "%", maxrewardamount: 50 },
		],
	});
	const ref = (await app.api("register", { email: "r@x.com" })).body;
	const friends = [];
	for (let i = 0; i < 3; i++) friends.push((await app.api("register", { email: `f${i}@x.com`, referrercode: ref.referralcode })).body);
	let c = 1000;
	const conv = async (f: any) => {
		const r = await app.api("registerconversionevent", { userkey: f.userkey, eventname: "Purchase", customid: String(++c), transactionvalue: 100, growthhack: "SaaS_Referrals" });
		if (r.status !== 200) throw new Error(JSON.stringify(r.body));
		await new Promise((r) => setTimeout(r, 300));
	};
	await conv(friends[0]);
	for (const phase of ["first", "steady"]) {
		counts.clear();
		on = true;
		await conv(phase === "first" ? friends[1] : friends[1]);
		on = false;
		const total = [...counts.values()].reduce((a, b) => a + b, 0);
		console.log(phase, total, JSON.stringify([...counts].sort((a, b) => b[1] - a[1]), null, 1));
	}
});
