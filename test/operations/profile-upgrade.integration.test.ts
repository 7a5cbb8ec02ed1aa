import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { migrateLedger } from "../../src/ledger/migrate";
import { LEDGER_MIGRATIONS } from "../../src/ledger/schema";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";

/**
 * Issue 49, "Done when": a ledger and users written by today's code (no
 * profile, no pointer, no counters in the ledger) convert correctly after the
 * upgrade. The ledgers are rolled back to schema step 13 (the profile table
 * dropped, the version set back), then migrated as a new deploy's object
 * would be: the profile table exists and is empty, as in every ledger
 * written before this code. The conversions then read each user from D1
 * once (operations/conversion-parties.ts) and decide exactly as the context
 * read did: the same rewards, fraud signals and statuses.
 */

type App = Awaited<ReturnType<typeof createApp>>;

let nextCustomId = 1;
const convert = (app: App, userkey: string) =>
	app.api("registerconversionevent", { userkey, eventname: "Signup", customid: `up-${nextCustomId++}`, growthhack: "SaaS_Referrals" });

/** The ledger as today's code left it: at step 13, without the profile; then upgraded by the new code's migration. */
async function writtenByTodaysCode(appid: string, userkey: string): Promise<void> {
	await runInDurableObject(ledgerFor(env, appid, userkey), (_ledger, state) => {
		const sql = state.storage.sql;
		sql.exec("DROP TABLE IF EXISTS profile");
		// Step 15's tables and state too (the friends page, issue 49 piece 4): a ledger at 13 has none of them.
		sql.exec("DROP TABLE IF EXISTS friends");
		sql.exec("DELETE FROM meta WHERE key = 'friends'");
		// The indexes of a ledger at 13: step 16 dropped the one by friend, step 17 folded the event key into the rule index.
		sql.exec("CREATE INDEX rewards_friend ON rewards(friend_userkey, seq) WHERE usertype = 'Referrer'");
		sql.exec("DROP INDEX rewards_rule_friend_event");
		sql.exec("CREATE UNIQUE INDEX rewards_event_key ON rewards(customid, key)");
		sql.exec("CREATE INDEX rewards_rule_friend ON rewards(ruleid, friend_userkey)");
		sql.exec("UPDATE meta SET value = '13' WHERE key = 'schema_version'");
		expect(migrateLedger(state.storage, LEDGER_MIGRATIONS)).toBe(LEDGER_MIGRATIONS.length);
		expect(sql.exec("SELECT COUNT(*) AS n FROM profile").one().n).toBe(0);
	});
}

const rewardsOf = async (appid: string, userkey: string) =>
	(await ledgerFor(env, appid, userkey).listRewards()).map((r) => ({
		usertype: r.usertype,
		reward: r.reward,
		rewardstatus: r.rewardstatus,
		fraudsignals: r.fraudsignals,
	}));

describe("conversions after the upgrade to the ledger's profile (issue 49)", () => {
	it("users and ledgers from before the profile convert with today's rewards, signals and statuses, and keep the profile", async () => {
		const app = await createApp({ velocitythreshold: 1 });
		const referrer = (await app.api("register", { email: "ann@example.com", phone: "+15550001", deviceid: "dev-ann" })).body;
		const first = (await app.api("register", { email: "bob@example.com", referrercode: referrer.referralcode })).body;
		// The second friend in the hour (velocity, over a threshold of 1), on the referrer's phone, later seen on its device.
		const second = (await app.api("register", { email: "cy@example.com", phone: "+15550001", referrercode: referrer.referralcode })).body;
		expect((await app.api("updateuser", { userkey: second.userkey, deviceid: "dev-ann" })).status).toBe(200);
		// A first conversion of the referrer makes its ledger hold rewards as today's code wrote them (none for an unreferred user).
		expect((await convert(app, referrer.userkey)).status).toBe(200);
		for (const user of [referrer, first, second]) await writtenByTodaysCode(app.appid, user.userkey);

		expect((await convert(app, first.userkey)).body).toMatchObject({ success: true, rewardscreated: 2 });
		expect((await convert(app, second.userkey)).body).toMatchObject({ success: true, rewardscreated: 2 });
		// What today's code gives for these users (test/fraud/signals.integration.test.ts asserts the same rules).
		expect(await rewardsOf(app.appid, first.userkey)).toEqual([
			{ usertype: "Friend", reward: "10", rewardstatus: "Approved", fraudsignals: [] },
		]);
		expect(await rewardsOf(app.appid, second.userkey)).toEqual([
			{ usertype: "Friend", reward: "10", rewardstatus: "Suspicious", fraudsignals: ["same_phone", "same_device", "velocity"] },
		]);
		expect(await rewardsOf(app.appid, referrer.userkey)).toEqual([
			{ usertype: "Referrer", reward: "10", rewardstatus: "Approved", fraudsignals: [] },
			{ usertype: "Referrer", reward: "10", rewardstatus: "Suspicious", fraudsignals: ["same_phone", "same_device", "velocity"] },
		]);
		// A friend's first event not named Signup moves it to Converted in D1 (through the projection, as before); the
		// other stays SignUp.
		const purchase = await app.api("registerconversionevent", {
			userkey: first.userkey,
			eventname: "Purchase",
			customid: `up-${nextCustomId++}`,
			growthhack: "SaaS_Referrals",
		});
		expect(purchase.body).toMatchObject({ success: true, rewardscreated: 0 });
		const statuses = await until(
			"the first friend Converted in D1",
			() =>
				env.DB.prepare("SELECT userkey, status FROM users WHERE appid = ? AND referrer_userid IS NOT NULL ORDER BY userid")
					.bind(app.appid)
					.all<{ userkey: string; status: string }>(),
			(rows) => rows.results[0]?.status === "Converted",
		);
		expect(statuses.results).toEqual([
			{ userkey: first.userkey, status: "Converted" },
			{ userkey: second.userkey, status: "SignUp" },
		]);
		// Read from D1 once and kept: the pointer, the velocity count and the identifiers are in the ledgers now.
		const kept = await ledgerFor(env, app.appid, second.userkey).profile();
		expect(kept.profile).toMatchObject({ referrerkey: referrer.userkey, recentReferrals: 2, phone: "15550001", devices: ["dev-ann"] });
		expect((await ledgerFor(env, app.appid, referrer.userkey).profile()).profile).toMatchObject({
			referrerkey: null,
			devices: ["dev-ann"],
		});
	});

	it("an attribution after the registration and a profile change reach the ledger's profile", async () => {
		const app = await createApp();
		const referrer = (await app.api("register", { email: "dee@example.com", phone: "+15550002" })).body;
		const friend = (await app.api("register", { email: "eve@example.com" })).body;
		// Registered without a code, its ledger keeps a profile without a referrer; the code applied later points it.
		expect((await app.api("applyreferrercode", { userkey: friend.userkey, referrercode: referrer.referralcode })).status).toBe(200);
		expect((await ledgerFor(env, app.appid, friend.userkey).profile()).profile).toMatchObject({ referrerkey: referrer.userkey });
		// The referrer's ledger keeps its own, read back by the same batch: its friends' conversions read no D1 for it.
		expect((await ledgerFor(env, app.appid, referrer.userkey).profile()).profile).toMatchObject({ phone: "15550002", referrerkey: null });
		// The friend's phone changes to the referrer's: the next conversion sees it (same_phone).
		expect((await app.api("updateuser", { userkey: friend.userkey, phone: "+15550002" })).status).toBe(200);
		expect((await convert(app, friend.userkey)).body).toMatchObject({ success: true, rewardscreated: 2 });
		expect(await rewardsOf(app.appid, referrer.userkey)).toEqual([
			{ usertype: "Referrer", reward: "10", rewardstatus: "Suspicious", fraudsignals: ["same_phone"] },
		]);
	});

	it("an import points its referred users' ledgers, with the velocity count today's code reads", async () => {
		const app = await createApp({ velocitythreshold: 2 });
		const referrer = (await app.api("register", { email: "fay@example.com" })).body;
		const users = [1, 2, 3].map((i) => ({ email: `imp${i}@example.com`, referrercode: referrer.referralcode }));
		const imported = await admin<{ users: { userkey: string }[] }>("POST", `/apps/${app.appid}/users:import`, { users });
		expect(imported.status).toBe(201);
		const keys = imported.body.users.map((u) => u.userkey);
		for (const userkey of keys)
			expect((await ledgerFor(env, app.appid, userkey).profile()).profile).toMatchObject({
				referrerkey: referrer.userkey,
				recentReferrals: 3,
			});
		expect((await ledgerFor(env, app.appid, referrer.userkey).profile()).profile).toMatchObject({ email: "fay@example.com" });
		expect((await convert(app, keys[0] ?? "")).body).toMatchObject({ success: true, rewardscreated: 2 });
		expect(await rewardsOf(app.appid, referrer.userkey)).toEqual([
			{ usertype: "Referrer", reward: "10", rewardstatus: "Suspicious", fraudsignals: ["velocity"] },
		]);
	});
});
