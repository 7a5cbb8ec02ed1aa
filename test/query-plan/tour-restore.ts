import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { erasedFriendsOf, markForgottenRewards } from "../../src/db/ledger-restore";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";
import { ok } from "./tour-http";

/**
 * A ledger's restore (issue 51, docs/deploy.md): the route up to the platform's
 * point-in-time recovery (absent here: 501), then the resync a restore is
 * followed by, driven directly on a ledger that lost its second reward, and
 * the marking of that reward in D1.
 */
export async function restoreTour(): Promise<void> {
	const app = await createApp({ rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }] });
	const referrer = ok(await app.api("register", { email: "plan-restore-ref@x.com" }), "register").body;
	const friend = ok(await app.api("register", { email: "plan-restore-fr@x.com", referrercode: referrer.referralcode }), "register").body;
	for (const customid of ["plan-r1", "plan-r2"]) {
		await app.api("registerconversionevent", { userkey: friend.userkey, eventname: "Purchase", customid, growthhack: "SaaS_Referrals" });
	}
	ok(await admin("DELETE", `/apps/${app.appid}/users/${friend.userkey}`), "erase the friend");
	const at = new Date(Date.now() - 60_000).toISOString();
	const refused = await admin("POST", `/apps/${app.appid}/users/${referrer.userkey}/ledger:restore`, { at });
	if (refused.status !== 501) throw new Error(`ledger restore: ${refused.status} ${JSON.stringify(refused.body)}`);
	const ledger = ledgerFor(env, app.appid, referrer.userkey);
	await ledger.flush();
	// What the platform's restore would do to a ledger restored to before the second reward.
	await runInDurableObject(ledger, async (_i, state) => void state.storage.sql.exec("DELETE FROM rewards WHERE seq = 2"));
	const resynced = await ledger.restoreLedger(app.appid, referrer.userkey, {
		step: "resync",
		formermaxseq: 2,
		formermaxversion: 1,
		erasedfriends: await erasedFriendsOf(env.DB, app.appid, referrer.userkey),
	});
	if (!resynced.ok || !("epoch" in resynced) || !resynced.forgotten) throw new Error(`resync: ${JSON.stringify(resynced)}`);
	await markForgottenRewards(env.DB, app.appid, referrer.userkey, resynced.forgotten, resynced.epoch, new Date().toISOString(), "plan");
	await app.api("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Purchase",
		customid: "plan-r3",
		growthhack: "SaaS_Referrals",
	});
}
