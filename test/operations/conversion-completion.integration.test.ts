import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { gateShard } from "../../src/domain/gate-shard";
import { withBindings } from "../../src/instrument/d1-metrics";
import { eventGateFor } from "../../src/ledger/event-gate";
import { ledgerFor } from "../../src/ledger/stub";
import { COMPLETION_DELAY_MS, completeRecordedConversions } from "../../src/operations/conversion-completion";
import { recordConversion } from "../../src/operations/conversion-work";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";

/**
 * The server completes recorded conversions (issue 20 item 10): an event
 * claimed in its gate by a call that died before its grants is granted by
 * the scheduled pass, without a client retry (issue 49: the pending mark is
 * the gate's, settled once D1 holds the event's row, which only the
 * announcement of its completed grants writes).
 */

async function referral() {
	const app = await createApp();
	const referrer = (await app.api("register", { email: "ref@x.com" })).body;
	const friend = (await app.api("register", { email: "fr@x.com", referrercode: referrer.referralcode })).body;
	return { ...app, referrer: referrer.userkey as string, referralcode: referrer.referralcode as string, friend: friend.userkey as string };
}

const diedAfterRecording = (appid: string, userkey: string, customid: string) =>
	recordConversion(env, {
		appid,
		userkey,
		customid,
		eventname: "Signup",
		transactionvalue: null,
		extrainfo: null,
		campaignid: null,
		growthhack: "SaaS_Referrals",
	});

/** The event's pending row in its gate (ledger/event-gate.ts): its failures, or null once settled. */
async function pendingMark(appid: string, customid: string): Promise<{ failures: number } | null> {
	const all = await eventGateFor(env, appid, customid).pendingBefore("9999-01-01T00:00:00.000Z", 100_000);
	const mine = all.find((e) => e.appid === appid && e.customid === customid);
	return mine ? { failures: mine.failures } : null;
}

/** D1's row of the event, once the projection of its announcement wrote it. */
const inD1 = (appid: string, customid: string) =>
	until(
		"the event in D1",
		() => env.DB.prepare("SELECT grants_pending FROM conversion_events WHERE appid = ? AND customid = ?").bind(appid, customid).first(),
		(row) => row !== null,
	);

/** A customid other than `customid` whose events of `appid` meet in the same gate. */
function sameGate(appid: string, customid: string): string {
	for (let i = 0; ; i++) if (gateShard(appid, `${customid}-${i}`) === gateShard(appid, customid)) return `${customid}-${i}`;
}

/** A pass as the minute's cron would run it once the event is older than the delay. */
const passAfterDelay = () => completeRecordedConversions(env, Date.now() + COMPLETION_DELAY_MS + 1_000);

describe("completion of recorded conversions", () => {
	it("grants an event whose call died after claiming it, once, and settles it once its row is in D1", async () => {
		const app = await referral();
		expect((await diedAfterRecording(app.appid, app.friend, "9001")).isNew).toBe(true);
		expect(await pendingMark(app.appid, "9001")).toEqual({ failures: 0 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);
		// Not before the delay: the request's own grants may still be under way.
		await completeRecordedConversions(env);
		expect(await pendingMark(app.appid, "9001")).toEqual({ failures: 0 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);

		// The pass takes every app's events (the test files share the gates): this event's own outcome is what is checked.
		expect((await passAfterDelay()).completed).toBeGreaterThanOrEqual(1);
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
		expect(await ledgerFor(env, app.appid, app.friend).listRewards()).toHaveLength(1);
		// The announcing ledger's flush writes D1's row; the next pass settles the event and grants nothing more.
		await ledgerFor(env, app.appid, app.friend).flush();
		expect(await inD1(app.appid, "9001")).toEqual({ grants_pending: null });
		expect((await passAfterDelay()).confirmed).toBeGreaterThanOrEqual(1);
		expect(await pendingMark(app.appid, "9001")).toBeNull();
		await passAfterDelay();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);
	});

	it("settles a conversion whose grants ran by its D1 row; refuses an erased user's event for good and drops its free text", async () => {
		const app = await referral();
		await app.api("registerconversionevent", { userkey: app.friend, eventname: "Signup", customid: "9002", growthhack: "SaaS_Referrals" });
		await inD1(app.appid, "9002");
		await passAfterDelay();
		expect(await pendingMark(app.appid, "9002")).toBeNull();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(1);

		const other = await referral();
		await recordConversion(env, {
			appid: other.appid,
			userkey: other.friend,
			customid: "9003",
			eventname: "Signup",
			transactionvalue: null,
			extrainfo: "note of the person",
			campaignid: null,
			growthhack: "SaaS_Referrals",
		});
		expect((await admin("DELETE", `/apps/${other.appid}/users/${other.friend}`)).status).toBeLessThan(300);
		const report = await passAfterDelay();
		expect(report.refused).toBeGreaterThanOrEqual(1);
		expect(await pendingMark(other.appid, "9003")).toBeNull();
		expect((await eventGateFor(env, other.appid, "9003").peek(other.appid, "9003", false))?.extrainfo).toBeNull();
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
		// The pass takes at most 50 events and the test files share the gates: passes until this event's has failed once.
		for (let pass = 0; pass < 20 && (await pendingMark(app.appid, "9101"))?.failures === 0; pass++) {
			await completeRecordedConversions(ledgersDown, Date.now() + COMPLETION_DELAY_MS + 1_000);
		}
		expect(await pendingMark(app.appid, "9101")).toEqual({ failures: 1 });
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(0);

		// A newer event that never failed comes first in its gate, though the failed one is older.
		const newer = sameGate(app.appid, "9101");
		await diedAfterRecording(app.appid, second.userkey, newer);
		const cutoff = new Date(Date.now() + 1_000).toISOString();
		const order = (await eventGateFor(env, app.appid, "9101").pendingBefore(cutoff, 100_000))
			.filter((e) => e.appid === app.appid)
			.map((e) => e.customid);
		expect(order).toEqual([newer, "9101"]);

		// Once the ledgers answer, both are granted (the referrer's two rewards, one per friend).
		for (let pass = 0; pass < 20 && (await ledgerFor(env, app.appid, app.referrer).listRewards()).length < 2; pass++)
			await passAfterDelay();
		expect(await ledgerFor(env, app.appid, app.referrer).listRewards()).toHaveLength(2);
	});
});
