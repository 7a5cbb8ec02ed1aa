import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerFor } from "../../src/ledger/stub";
import { admin, createApp, withWebhook } from "../support/api";
import { projectionRows } from "../support/layout";

/**
 * Issue 33: an event goes to the webhook endpoint the app has when it
 * happens (docs/webhooks.md). A conversion reads whether the app has one
 * with its context (the same D1 round trip) and hands it to the ledgers
 * with the grants, so for an app without an endpoint they queue no
 * `reward.created` entry: rows written for nothing. The `conversion.recorded`
 * entry stays: its flush confirms the event's grants (db/event-grants.ts).
 * Each ledger logs the webhook entries it queues through a trigger, so no
 * flush can hide one by delivering it before the test looks. Since the
 * `conversion.recorded` event travels inside the projection entry of a
 * reward the conversion created (issue 33, one outbox row less), the
 * triggers log it there as `folded` (in the entry's insert, or in an update
 * of it where the event is folded in later).
 */

type Ledger = ReturnType<typeof ledgerFor>;

/** Logs into `queued_webhooks` every webhook entry the ledger's outbox takes from now on. */
const logWebhookEntries = (stub: Ledger) =>
	runInDurableObject(stub, (_l, state) => {
		state.storage.sql.exec("CREATE TABLE queued_webhooks (ref TEXT NOT NULL)");
		state.storage.sql.exec(
			"CREATE TRIGGER queued_webhooks_log AFTER INSERT ON outbox WHEN NEW.kind = 'webhook' BEGIN INSERT INTO queued_webhooks VALUES (NEW.ref); END",
		);
		// A projection entry that takes an event: in its insert (a grant alone) or later (the friend's side of a grant with its referrer).
		state.storage.sql.exec(
			`CREATE TRIGGER queued_folded_log AFTER INSERT ON outbox WHEN NEW.kind = 'projection' AND NEW.payload ->> '$.event' IS NOT NULL
			 BEGIN INSERT INTO queued_webhooks VALUES ('folded:' || (NEW.payload ->> '$.event.eventid')); END`,
		);
		state.storage.sql.exec(
			`CREATE TRIGGER queued_folded_update_log AFTER UPDATE ON outbox WHEN NEW.kind = 'projection' AND NEW.payload ->> '$.event' IS NOT NULL
			   AND OLD.payload ->> '$.event' IS NULL
			 BEGIN INSERT INTO queued_webhooks VALUES ('folded:' || (NEW.payload ->> '$.event.eventid')); END`,
		);
	});

/** The kinds of the webhook entries logged, e.g. `reward` (reward.created ids), `conversion` and `folded` (in a projection entry). */
const queuedWebhooks = (stub: Ledger) =>
	runInDurableObject(stub, (_l, state) =>
		state.storage.sql
			.exec<{ ref: string }>("SELECT ref FROM queued_webhooks ORDER BY rowid")
			.toArray()
			.map((r) =>
				r.ref.startsWith("folded:evt_conversion_") ? "folded" : r.ref.startsWith("webhook:evt_conversion_") ? "conversion" : "reward",
			),
	);

/** An app (without a webhook URL unless `hooked`) whose Purchase rewards both sides, and a friend whose ledgers exist. */
async function steadyReferral(hooked: boolean) {
	const app = await createApp(
		{
			rewardrules: [
				{ rewardusertype: "Friend", eventname: "Purchase", reward: 2, rewardunit: "USD" },
				{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" },
			],
		},
		hooked ? withWebhook() : {},
	);
	const referrer = (await app.api<{ userkey: string; referralcode: string }>("register", { email: "wh-ref@x.com" })).body;
	const friend = (await app.api<{ userkey: string }>("register", { email: "wh-fr@x.com", referrercode: referrer.referralcode })).body;
	let n = 0;
	const purchase = async () => {
		const res = await app.api("registerconversionevent", {
			userkey: friend.userkey,
			eventname: "Purchase",
			customid: `wh-${++n}`,
			growthhack: "SaaS_Referrals",
		});
		expect(res.body).toMatchObject({ success: true, rewardscreated: 2 });
	};
	// The first Purchase creates both ledgers; the test watches the ones after it (a steady conversion).
	await purchase();
	const ledgers = { friend: ledgerFor(env, app.appid, friend.userkey), referrer: ledgerFor(env, app.appid, referrer.userkey) };
	await logWebhookEntries(ledgers.friend);
	await logWebhookEntries(ledgers.referrer);
	return { ...app, ledgers, purchase };
}

/** The app's conversion and reward events in D1's delivery log (sign-ups and attributions have events of their own). */
const eventsOf = async (appid: string) =>
	(
		await env.DB.prepare(
			"SELECT type FROM outbox_events WHERE appid = ? AND type IN ('conversion.recorded', 'reward.created') ORDER BY type",
		)
			.bind(appid)
			.all<{ type: string }>()
	).results.map((e) => e.type);

const pendingGrants = async (appid: string) =>
	(
		await env.DB.prepare("SELECT COUNT(*) AS n FROM conversion_events WHERE appid = ? AND grants_pending IS NOT NULL").bind(appid).first<{
			n: number;
		}>()
	)?.n;

describe("webhook entries of a conversion follow the app's endpoint when it happens", () => {
	it("an app without a webhook URL queues no reward.created entry on either ledger, and its conversions are still confirmed", async () => {
		const { appid, ledgers, purchase } = await steadyReferral(false);
		await purchase();
		await purchase();
		expect(await queuedWebhooks(ledgers.friend)).toEqual(["folded", "folded"]);
		expect(await queuedWebhooks(ledgers.referrer)).toEqual([]);
		await ledgers.friend.flush();
		await ledgers.referrer.flush();
		// The projection is written and the announcement confirmed the grants, so the completion pass has nothing to do.
		expect(await pendingGrants(appid)).toBe(0);
		expect(await projectionRows("SELECT rewarddtlid FROM rewards WHERE appid = ?", appid)).toHaveLength(6);
		expect(await eventsOf(appid)).toEqual([]);
	});

	it("an app with a webhook URL still gets every event of a conversion", async () => {
		const { appid, ledgers, purchase } = await steadyReferral(true);
		await purchase();
		expect(await queuedWebhooks(ledgers.friend)).toEqual(["reward", "folded"]);
		expect(await queuedWebhooks(ledgers.referrer)).toEqual(["reward"]);
		await ledgers.friend.flush();
		await ledgers.referrer.flush();
		// Both conversions' events: two reward.created and one conversion.recorded each.
		expect(await eventsOf(appid)).toEqual([
			"conversion.recorded",
			"conversion.recorded",
			"reward.created",
			"reward.created",
			"reward.created",
			"reward.created",
		]);
	});

	it("an app that sets its webhook URL afterwards gets the events of the conversions that happen after", async () => {
		const { appid, ledgers, purchase } = await steadyReferral(false);
		await purchase();
		// Delivered before the URL is set: the D1 guard of a later flush would pass it (the old rule, kept for paths without the hint).
		await ledgers.friend.flush();
		await ledgers.referrer.flush();
		const patched = await admin("PATCH", `/apps/${appid}`, withWebhook());
		expect(patched.status).toBe(200);
		await purchase();
		expect(await queuedWebhooks(ledgers.friend)).toEqual(["folded", "reward", "folded"]);
		expect(await queuedWebhooks(ledgers.referrer)).toEqual(["reward"]);
		await ledgers.friend.flush();
		await ledgers.referrer.flush();
		const events = await env.DB.prepare(
			"SELECT type, payload FROM outbox_events WHERE appid = ? AND type IN ('conversion.recorded', 'reward.created') ORDER BY type",
		)
			.bind(appid)
			.all<{ type: string; payload: string }>();
		expect(events.results.map((e) => e.type)).toEqual(["conversion.recorded", "reward.created", "reward.created"]);
		expect(JSON.parse(events.results[0]!.payload)).toMatchObject({ customid: "wh-3" });
	});
});
