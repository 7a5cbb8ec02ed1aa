import { env } from "cloudflare:workers";
import { eventGateFor } from "../../src/ledger/event-gate";
import { completeRecordedConversions } from "../../src/operations/conversion-completion";
import { recordConversion } from "../../src/operations/conversion-work";
import { backfillEventGates } from "../../src/operations/event-gate-backfill";
import { admin, createApp } from "../support/api";
import { until } from "../support/until";
import { ok } from "./tour-http";

/**
 * The event gates (issue 49, src/ledger/event-gate.ts): an event whose call
 * died after its claim, completed and then confirmed by the completion pass
 * (the D1 read of which pending events have their row); an erasure of a
 * person with an event recorded in D1 before the gates, with its decision
 * (redacted in D1 as before).
 */
/** A grant as today's code froze it in D1, naming the friend by email. */
const oldGrant = (userkey: string, campaignid: number) => ({
	key: "plan-gate-old:0",
	ruleid: 0,
	rewardfrequency: 0,
	usertype: "Friend",
	amount: 1,
	rewardunit: "USD",
	rewardtype: "InstoreCredits",
	campaignid,
	campaignname: "Plan",
	growthhack: "SaaS_Referrals",
	eventname: "Signup",
	customid: "plan-gate-old",
	friend: { userkey, email: "plan-gate-fr@x.com", name: null, profileimage: null },
	status: "Approved",
	holdUntil: null,
	comment: null,
});

export async function gateTour(): Promise<void> {
	const app = await createApp();
	const referrer = ok(await app.api("register", { email: "plan-gate-ref@x.com" }), "register").body;
	const friend = ok(await app.api("register", { email: "plan-gate-fr@x.com", referrercode: referrer.referralcode }), "register").body;
	const input = {
		appid: app.appid,
		userkey: friend.userkey,
		customid: "plan-gate-1",
		eventname: "Signup",
		transactionvalue: null,
		extrainfo: null,
		campaignid: null,
		growthhack: "SaaS_Referrals",
	};
	await recordConversion(env, input);
	const later = Date.now() + 120_000;
	// First pass: completes it (no D1 row yet); once its row is in D1, the next pass settles it.
	await completeRecordedConversions(env, later);
	await until(
		"the event in D1",
		() => env.DB.prepare("SELECT 1 AS x FROM conversion_events WHERE appid = ? AND customid = ?").bind(app.appid, "plan-gate-1").first(),
		(row) => row !== null,
	);
	await completeRecordedConversions(env, later);
	// A pass that failed an event counts one failure more on it (a ledger down: driven directly here).
	const died = await recordConversion(env, { ...input, customid: "plan-gate-2" });
	const gate = eventGateFor(env, app.appid, "plan-gate-2");
	const failures = 0;
	await gate.settle([{ appid: app.appid, customid: "plan-gate-2", createdAt: died.event.createdAt, failures, outcome: "failed" }]);
	// An event of today's code, before the gates: its row in D1 carries the decision, which an erasure redacts.
	const user = await env.DB.prepare("SELECT userid, campaignid FROM users WHERE appid = ? AND userkey = ?")
		.bind(app.appid, friend.userkey)
		.first<{ userid: number; campaignid: number }>();
	await env.DB.prepare(
		`INSERT INTO conversion_events (appid, customid, userid, eventname, campaignid, growthhack, created_at, decision)
		 VALUES (?, 'plan-gate-old', ?, 'Signup', ?, 'SaaS_Referrals', ?, ?)`,
	)
		.bind(
			app.appid,
			user?.userid,
			user?.campaignid,
			new Date().toISOString(),
			JSON.stringify([{ owner: "friend", grant: oldGrant(friend.userkey, user?.campaignid ?? 0) }]),
		)
		.run();
	// The app marked as one with events from before the gates (migration 0045), and its backfill in pages of one.
	await env.DB.prepare("UPDATE apps SET legacy_events = 1 WHERE appid = ?").bind(app.appid).run();
	for (let run = 0; run < 20 && (await backfillEventGates(env, 1)).events > 0; run++);
	ok(await admin("DELETE", `/apps/${app.appid}/users/${friend.userkey}`), "erase");
}
