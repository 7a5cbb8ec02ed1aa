import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventsAwaitingGrants } from "../../src/db/event-grants";
import { withBindings } from "../../src/instrument/d1-metrics";
import { ledgerFor } from "../../src/ledger/stub";
import { COMPLETION_DELAY_MS, completeRecordedConversions } from "../../src/operations/conversion-completion";
import { recordConversion } from "../../src/operations/conversion-work";
import { admin, createApp } from "../support/api";

/**
 * The server completes recorded conversions (issue 20 item 10): an event
 * recorded by a call that died before its grants is granted by the
 * scheduled pass, without a client retry.
 */

async function referral() {
	const app = await createApp();
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "fr@x.com", referrercode: referrer.referralcode })).body;
	return { ...app, referrer: referrer.userkey as string, referralcode: referrer.referralcode as string, friend: friend.userkey as string };
}

const diedAfterRecording = (appid: string, userkey: string, customid: string) =>
	recordConversion(env.DB, {
		appid,
		userkey,
		customid,
		eventname: "Signup",
		transactionvalue: null,
		extrainfo: null,
		campaignid: null,
		growthhack: "SaaS_Referrals",
	});

const pendingMark = (appid: string, customid: string) =>
	env.DB.prepare("SELECT grants_pending FROM conversion_events WHERE appid = ? AND customid = ?").bind(appid, customid).first();

/** A pass as the minute's cron would run it once the event is older than the delay. */
const passAfterDelay = () => completeRecordedConversions(env, Date.now() + COMPLETION_DELAY_MS + 1_000);

describe("completion of recorded conversions", () => {
	it("grants an event whose call died after recording it, once, and clears its mark", async () => {
		const app = await referral();
		expect((await diedAfterRecording(app.appid, app.friend, "9001")).isNew).toBe(true);
		expect(await pendingMark(app.appid, "9001")).toEqual({ grants_pending: 1 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);
		// Not before the delay: the request's own grants may still be under way.
		await completeRecordedConversions(env);
		expect(await pendingMark(app.appid, "9001")).toEqual({ grants_pending: 1 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);

		// The pass takes every app's events (the test files share D1): this event's own outcome is what is checked.
		expect((await passAfterDelay()).completed).toBeGreaterThanOrEqual(1);
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
		expect(await ledgerFor(env, app.appid, app.friend).listRewards()).toHaveLength(1);
		// The announcing ledger's flush confirms the grants; later passes leave the event alone.
		await ledgerFor(env, app.appid, app.friend).flush();
		expect(await pendingMark(app.appid, "9001")).toEqual({ grants_pending: null });
		await passAfterDelay();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
	});

	it("a conversion whose grants ran is confirmed by its own flush; an erased user's event is dropped from the pass", async () => {
		const app = await referral();
		await app.api("registerconversionevent", { userkey: app.friend, eventname: "Signup", customid: "9002", growthhack: "SaaS_Referrals" });
		await ledgerFor(env, app.appid, app.friend).flush();
		expect(await pendingMark(app.appid, "9002")).toEqual({ grants_pending: null });

		const other = await referral();
		await diedAfterRecording(other.appid, other.friend, "9003");
		expect((await admin("DELETE", `/apps/${other.appid}/users/${other.friend}`)).status).toBeLessThan(300);
		const report = await passAfterDelay();
		expect(report.refused).toBeGreaterThanOrEqual(1);
		expect(await pendingMark(other.appid, "9003")).toEqual({ grants_pending: null });
		expect(await ledgerFor(env, other.appid, other.referrer).listRewards()).toHaveLength(0);
	});

	it("counts each pass an event failed in, and takes events that never failed before those that keep failing", async () => {
		const app = await referral();
		const second = (await app.api("register", { email: "fr2@x.com", referrercode: app.referralcode })).body;
		// Every ledger of this app throws (a plain error, as a ledger down would): its events fail in the pass.
		const ledgersDown = withBindings(env, {
			USER_LEDGER: new Proxy(env.USER_LEDGER, {
				get(target, prop) {
					if (prop === "getByName")
						return (name: string) => {
							if (name.includes(app.appid)) throw new Error("ledger unavailable");
							return target.getByName(name);
						};
					const value = Reflect.get(target, prop);
					return typeof value === "function" ? value.bind(target) : value;
				},
			}),
		});
		await diedAfterRecording(app.appid, app.friend, "9101");
		// The pass takes at most 50 events and the test files share D1: passes until this event's has failed once.
		for (let pass = 0; pass < 20 && (await pendingMark(app.appid, "9101"))?.grants_pending === 1; pass++) {
			await completeRecordedConversions(ledgersDown, Date.now() + COMPLETION_DELAY_MS + 1_000);
		}
		expect(await pendingMark(app.appid, "9101")).toEqual({ grants_pending: 2 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);

		// A newer event that never failed comes first, though the failed one is older.
		await diedAfterRecording(app.appid, second.userkey, "9102");
		const cutoff = new Date(Date.now() + 1_000).toISOString();
		const order = (await eventsAwaitingGrants(env.DB, cutoff, 100_000)).filter((e) => e.appid === app.appid).map((e) => e.customid);
		expect(order).toEqual(["9102", "9101"]);

		// Once the ledgers answer, both are granted (the referrer's two rewards, one per friend).
		for (let pass = 0; pass < 20 && (await ledgerFor(env, app.appid, app.referrer).listRewards()).length < 2; pass++)
			await passAfterDelay();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(2);
	});
});
